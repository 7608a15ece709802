"""Can a guard on the job's own noise estimate keep flat short runs from being stopped?
(issue 11; an exploration on TUNING material only, nothing here changes the default)

    python benchmarks/own_noise_guards.py [--seed 0] [--runs 4] [--short-runs 50]

With nothing stated, the default reads the job's own noise estimate (``noise.sigma_hat``),
and on the held-out short runs it stops 4.5-6.5% of flat runs (bar: 2%). Each variant here
replaces that estimate for the duration of one scoring pass and scores the default with
its own noise on the tuning short part and the tuning synthetic parts
(``realshape.short_cells`` / ``realshape.synthetic`` with ``held_out=False``):

* ``widen=C``: the estimate widened by (1 + C / sqrt(k)) for k second differences (the
  shipped rule has C = 1);
* ``min_diffs=K``: no own estimate (so no stop) before K second differences;
* ``rms<K0``: below K0 second differences, the plain root-mean-square of the second
  differences instead of their robust, clipped scale (a small sample's robust scale can
  be near 0 when two or three of them agree; quantised pass rates make that common).
"""

from __future__ import annotations

import argparse
import math

import evalstop.detectors.stated_noise as stated_noise
from evalstop.detbench import realshape
from evalstop.detbench.realshape_score import score
from evalstop.detectors import DEFAULT_SPEC
from evalstop.detectors import noise as nz


def estimate(widen: float = 1.0, min_diffs: int = nz.MIN_DIFFS, rms_below: int = 0):
    def sigma(values):
        d = nz.second_differences(values[-nz.MAX_VALUES:])
        k = len(d)
        if k < max(nz.MIN_DIFFS, min_diffs):
            return None
        scale = math.sqrt(sum(x * x for x in d) / k) if k < rms_below else nz.diff_scale(d)
        return scale / math.sqrt(6.0) * (1.0 + widen / math.sqrt(k))
    return sigma


VARIANTS = [("shipped", {}), ("widen=1.5", {"widen": 1.5}), ("widen=2", {"widen": 2.0}),
            ("widen=3", {"widen": 3.0}), ("min_diffs=5", {"min_diffs": 5}),
            ("min_diffs=7", {"min_diffs": 7}), ("widen=2,min_diffs=5",
                                                {"widen": 2.0, "min_diffs": 5}),
            ("rms<8", {"rms_below": 8}), ("rms always", {"rms_below": 10**9})]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=4, help="runs per synthetic cell")
    ap.add_argument("--short-runs", type=int, default=50, help="runs per short cell")
    args = ap.parse_args()
    short = realshape.short_cells(args.seed, args.short_runs, held_out=False)
    syn = realshape.synthetic(args.seed, args.runs, held_out=False)
    additive = [c for c in syn if c.items is None]
    print(f"tuning material, seed {args.seed}; default {DEFAULT_SPEC}, own noise")
    print("| variant | short: recall within 3 | short: flat stopped | additive: P / R / "
          "harmful | pass rates: P / R / harmful |")
    print("| --- | --- | --- | --- | --- |")
    shipped = stated_noise.sigma_hat
    try:
        for name, kw in VARIANTS:
            stated_noise.sigma_hat = estimate(**kw)
            s = score(DEFAULT_SPEC, short, "own")
            a = score(DEFAULT_SPEC, additive, "own")
            p = score(DEFAULT_SPEC, [c for c in syn if c.items is not None], "own")
            print(f"| {name} | {s['recall_within3']:.3f} | {100 * s['flat_stopped']:.1f}% | "
                  f"{a['precision']:.3f} / {a['recall']:.3f} / {100 * a['harmful_rate']:.1f}% | "
                  f"{p['precision']:.3f} / {p['recall']:.3f} / {100 * p['harmful_rate']:.1f}% |",
                  flush=True)
    finally:
        stated_noise.sigma_hat = shipped


if __name__ == "__main__":
    main()
