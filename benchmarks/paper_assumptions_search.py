"""The search behind the ``paper-assumptions`` knob preset (issue 13), printed.

Walks the workload-knob grid of ``evalstop.experiments.assumption_search`` in order of
cost (how far each setting is from the paper preset) and prints every setting evaluated,
then the chosen one: the least-changed setting whose main-table precision, recall and FPR
(``evalstop:k=2``, 200 jobs, sigma 0.02) lie in the paper's region over the search seeds.
Only workload knobs are searched, never a detector setting.

    python benchmarks/paper_assumptions_search.py [--seeds 20]

The chosen values are recorded in ``evalstop.experiments.assumptions.PAPER_ASSUMPTIONS``.
"""

from __future__ import annotations

import argparse
import time

from evalstop.experiments.assumption_search import SEARCH_SEED, search


def _fmt(r: dict) -> str:
    c = r["candidate"]
    return (f"{r['cost']:5.2f}  c_late {c.c_late:6.2f}  c_decline {c.c_decline:5.2f}  "
            f"evals {c.n_evals:2d}  {'all ' if c.watch_lora_dpo else 'RLHF'}  "
            f"SNR late {r['late_snr']:5.2f} decline {r['decline_snr']:5.2f}  "
            f"prec {r['precision'].mean:.3f} [{r['precision'].lo:.3f}]  "
            f"rec {r['recall'].mean:.3f} [{r['recall'].lo:.3f}]  "
            f"FPR {r['fpr'].mean:.3f} [{r['fpr'].hi:.3f}]  {'PASS' if r['passes'] else ''}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--all", action="store_true", help="print every setting, not only passes "
                    "and the cheapest 20")
    args = ap.parse_args()
    t0 = time.perf_counter()
    shown = [0]

    def log(r):
        if args.all or r["passes"] or shown[0] < 20:
            shown[0] += 1
            print(_fmt(r), flush=True)

    print(f"search seeds: base {SEARCH_SEED}, {args.seeds} seeds; [..] = the 95% interval "
          "bound that must lie in the region (prec >= 0.97, rec >= 0.98, FPR <= 0.02)")
    best, seen = search(args.seeds, log=log)
    print(f"evaluated {len(seen)} settings in {time.perf_counter() - t0:.1f} s")
    print("chosen:" if best else "no setting on the grid passes")
    if best:
        print(_fmt(best))


if __name__ == "__main__":
    main()
