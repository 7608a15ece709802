"""Generate and pack the small-gain dense-eval lab corpora (``evalstop.lab.dense_small``).

    python benchmarks/make_dense_small.py PART [--out DIR] [--pack-dir src/evalstop/data]
        [--workers 2]

PART is ``small-tuning`` or ``small-held-out``. Resumable (complete runs are skipped);
the packed files are deterministic for given runs, except the wall times in the metadata.
Needs torch (the ``lab`` extra).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from evalstop.lab.dense_small import small_grid, small_provenance, small_spec
from evalstop.lab.generate import generate, pack


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part")
    ap.add_argument("--out", default=None, help="run folder (default lab2s_runs_PART)")
    ap.add_argument("--pack-dir", default="src/evalstop/data")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    spec = small_spec(args.part)
    out = args.out or f"lab2s_runs_{args.part}"
    configs = small_grid(args.part)
    t0 = time.perf_counter()
    done = generate(configs, out, workers=args.workers)
    wall = time.perf_counter() - t0
    command = " ".join(shlex.quote(x) for x in ["python", "benchmarks/make_dense_small.py",
                                                 args.part, "--out", out, "--pack-dir",
                                                 args.pack_dir, "--workers",
                                                 str(args.workers)])
    summary = pack(configs, out, args.pack_dir, command=command, files=spec.files(),
                   grid_info={"blocks": [b.to_dict() for b in spec.blocks],
                              "eval_every": spec.eval_every, "eval_set": "fixed",
                              "generate_wall_s": round(wall, 1), "workers": args.workers},
                   extra={"provenance": small_provenance(args.part)})
    print(f"{done['ran']} run(s) done, {done['skipped']} already complete; {wall:.0f} s wall. "
          f"{summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
