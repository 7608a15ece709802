"""What the default's paths after 20 evals cost the simulator's planned stops.

    python benchmarks/plan_speed_failshapes.py [--out benchmarks/results/issue46/plan_speed.txt]

With ``--out``, the rows also go to the same path with ``.json`` (the figures the docs
quote).

With the default (collapse test and dead-run path on) ``block_cusum_array`` plans the
first 20 evals and the compiled twin (``block_cusum_jit.rule_rows``, the ``fast`` extra)
runs the whole rule on the rows left; issue 21's default (``RULE21_DEFAULT_SPEC``) is
planned up to its first merge and by ``block_cusum_jit.long_rows`` past it. Times
``sim.stops.stop_index`` for both on rising noisy rows of 20, 100 and 400 evals (one
warm-up call on the same rows first, so numba's import, load and compile are not
counted). Prints seconds and microseconds per eval; wall-clock figures, on whatever load
the machine has.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import numpy as np

from evalstop.detectors import DEFAULT_SPEC, RULE21_DEFAULT_SPEC, make_detector
from evalstop.sim.stops import stop_index


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write the lines to this file")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    lines, rows = [], []
    for m, n in ((20, 2000), (100, 2000), (400, 500)):
        x = np.arange(1, m + 1) / m
        obs = np.clip(0.3 + 0.3 * np.minimum(x / 0.3, 1.0)[None, :]
                      + rng.normal(0.0, 0.03, (n, m)), 0.0, 1.0)
        zero = np.zeros_like(obs)
        for name, spec in (("issue-21 default", RULE21_DEFAULT_SPEC), ("default", DEFAULT_SPEC)):
            new = functools.partial(make_detector, spec)
            stop_index(new, obs, zero, zero, x)  # the twin's load and compile not counted
            t0 = time.perf_counter()
            stop_index(new, obs, zero, zero, x)
            dt = time.perf_counter() - t0
            line = (f"{m:4d} evals x {n} jobs  {name:17s} {dt:7.3f} s  "
                    f"{dt / (n * m) * 1e6:7.3f} us/eval")
            print(line, flush=True)
            lines.append(line)
            rows.append({"evals": m, "jobs": n, "rule": name, "seconds": round(dt, 4),
                         "us_per_eval": round(dt / (n * m) * 1e6, 4)})
    if args.out:
        out = Path(args.out)
        out.write_text("\n".join(lines) + "\n")
        out.with_suffix(".json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
