"""What the default's paths after 20 evals cost the simulator's planned stops.

    python benchmarks/plan_speed_failshapes.py [--out benchmarks/results/issue46/plan_speed.txt]

The compiled twin (``block_cusum_jit``) repeats issue 21's rule only: with the default
(collapse test and dead-run path on) ``block_cusum_array`` plans the first 20 evals and
leaves longer rows to the detector objects. Times ``sim.stops.stop_index`` for the
default and for issue 21's default (``RULE21_DEFAULT_SPEC``) on rising noisy rows of 20,
100 and 400 evals (one warm-up call first, so numba's compile is not counted). Prints
seconds and microseconds per eval; wall-clock figures, on whatever load the machine has.
"""

from __future__ import annotations

import argparse
import functools
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
    lines = []
    for m, n in ((20, 2000), (100, 2000), (400, 500)):
        x = np.arange(1, m + 1) / m
        obs = np.clip(0.3 + 0.3 * np.minimum(x / 0.3, 1.0)[None, :]
                      + rng.normal(0.0, 0.03, (n, m)), 0.0, 1.0)
        zero = np.zeros_like(obs)
        for name, spec in (("issue-21 default", RULE21_DEFAULT_SPEC), ("default", DEFAULT_SPEC)):
            new = functools.partial(make_detector, spec)
            stop_index(new, obs[:50], zero[:50], zero[:50], x)
            t0 = time.perf_counter()
            stop_index(new, obs, zero, zero, x)
            dt = time.perf_counter() - t0
            line = (f"{m:4d} evals x {n} jobs  {name:17s} {dt:7.3f} s  "
                    f"{dt / (n * m) * 1e6:7.3f} us/eval")
            print(line, flush=True)
            lines.append(line)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
