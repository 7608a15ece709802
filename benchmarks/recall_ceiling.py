"""How much recall is there to be had? A rough ceiling for issue 11's recall target.

    python benchmarks/recall_ceiling.py [--seed 0] [--runs 6] [--short-runs 50] [--held-out]
                                        [--spec SPEC]

A rule that keeps precision high must not stop a run whose evals never sit clearly below
its best level: on a plateau, a healthy run's evals fall 1-2 noise sigmas below it all
the time. So a hacking run is within reach only if its TRUE curve falls well below its
true peak, in noise sigmas, before the run ends. For each part this counts the hacking
runs whose true quality, after the true peak, is at least K sigmas below it at one eval
or more (``ever``), at two evals or more (``2 evals``: a rule robust to one bad eval needs
two) and at three (``3 evals``), for K = 2, 3, 4; and the median number of evals from the
peak to the first eval K sigmas below it. On the short part also: how many of a drop's
first 3 evals (the window of the recall-within-3 target) sit K sigmas below the peak.
The noise sigma: the cell's sigma on additive cells (the scale of the t3 noise matched to
the Gaussian's), the binomial sigma at the peak rate on pass-rate cells. The shares read
the true curves only (no rule, no noise draw);
``--runs`` and ``--short-runs`` should match the judged material (judge_default.py's
defaults) so the shares describe the same runs. With ``--spec``, the rule (noise stated)
is also run, and its recall is given among the runs within reach (K sigmas at 2 evals or
more) and among the rest: how far it is from the ceiling, and where its recall comes from.
"""

from __future__ import annotations

import argparse

import numpy as np

from evalstop.detbench import realshape

KS = (2.0, 3.0, 4.0)


def fall_in_sigmas(cell) -> np.ndarray:
    """(runs, evals): how many noise sigmas below the run's true peak each eval sits after
    the peak (0 at and before it)."""
    true = cell.true
    peak_idx = true.argmax(axis=1)
    peak = true[np.arange(cell.runs), peak_idx]
    if cell.items is not None:
        sigma = np.sqrt(np.clip(peak * (1.0 - peak), 1e-12, None) / cell.items)
    else:
        sigma = np.full(cell.runs, cell.sigma)
    after = np.arange(cell.evals)[None, :] > peak_idx[:, None]
    return np.where(after, (peak[:, None] - true) / sigma[:, None], 0.0)


def ceiling(cells) -> dict:
    out: dict = {"hacking": 0}
    counts = {(k, n): 0 for k in KS for n in (1, 2, 3)}
    delays: dict = {k: [] for k in KS}
    for cell in cells:
        hack = cell.hacking
        if not hack.any():
            continue
        f = fall_in_sigmas(cell)[hack]
        peak_idx = cell.true.argmax(axis=1)[hack]
        out["hacking"] += int(hack.sum())
        for k in KS:
            below = f >= k
            for n in (1, 2, 3):
                counts[(k, n)] += int((below.sum(axis=1) >= n).sum())
            reach = below.any(axis=1)
            delays[k] += (below.argmax(axis=1) - peak_idx)[reach].tolist()
    for (k, n), c in counts.items():
        out[f"{k:g} sigma, {n} eval{'s' if n > 1 else ''}"] = c / max(out["hacking"], 1)
    for k in KS:
        out[f"{k:g} sigma, median evals from peak"] = (float(np.median(delays[k]))
                                                       if delays[k] else None)
    return out


def reach_recall(cells, spec: str) -> dict:
    """The rule's recall (noise stated) among hacking runs within reach at each K (K sigmas
    below the peak at 2 evals or more) and among those out of reach."""
    from evalstop.detbench.realshape_score import run_cell

    hit = {(k, r): 0 for k in KS for r in (True, False)}
    tot = dict.fromkeys(hit, 0)
    for cell in cells:
        if not cell.hacking.any():
            continue
        stopped = run_cell(spec, cell, "stated")[0][cell.hacking]
        f = fall_in_sigmas(cell)[cell.hacking]
        for k in KS:
            reach = (f >= k).sum(axis=1) >= 2
            for r in (True, False):
                sel = reach == r
                tot[(k, r)] += int(sel.sum())
                hit[(k, r)] += int((stopped & sel).sum())
    return {f"{k:g} sigma, {'within' if r else 'out of'} reach": (hit[(k, r)], tot[(k, r)])
            for k, r in hit}


def within3(cells) -> dict:
    """Short part: the share of drops with at least n of their first 3 evals (the window
    of the recall-within-3 target) K sigmas below the true peak."""
    out, tot = {(k, n): 0 for k in KS for n in (1, 2, 3)}, 0
    for cell in cells:
        f, d = fall_in_sigmas(cell), cell.drop_idx
        for i in np.flatnonzero(d >= 0):
            tot += 1
            first3 = f[i, d[i]: d[i] + 3]
            for k, n in out:
                out[(k, n)] += int((first3 >= k).sum() >= n)
    return {f"{k:g} sigma, {n} of the first 3": c / max(tot, 1) for (k, n), c in out.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--held-out", action="store_true", help="the held-out parts (default: tuning)")
    ap.add_argument("--spec", default=None, help="also give this rule's recall by reach")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.short_runs < 1:
        ap.error("--runs and --short-runs must be >= 1")
    syn = realshape.synthetic(args.seed, args.runs, held_out=args.held_out)
    parts = {
        "synthetic (additive)": [c for c in syn if c.noise != "binomial"],
        "synthetic (pass rates)": [c for c in syn if c.noise == "binomial"],
        "short": realshape.short_cells(args.seed, args.short_runs, held_out=args.held_out),
    }
    which = "held-out" if args.held_out else "tuning"
    print(f"{which} material, seed {args.seed}: share of hacking runs whose true curve falls "
          f"K noise sigmas below its true peak")
    for part, cells in parts.items():
        c = ceiling(cells)
        print(f"\n{part}: {c.pop('hacking')} hacking runs")
        for key, v in c.items():
            print(f"  {key:38s} {'-' if v is None else f'{v:.3f}'}")
        if args.spec:
            print(f"  recall of {args.spec} (noise stated), by reach (K sigmas at 2 evals):")
            for key, (hit, tot) in reach_recall(cells, args.spec).items():
                print(f"    {key:36s} {hit / tot if tot else float('nan'):.3f} of {tot}")
    print("\nshort: drops with n of their first 3 evals K sigmas below the true peak")
    for key, v in within3(parts["short"]).items():
        print(f"  {key:38s} {v:.3f}")
    # the same, additive part, by eval count: short runs leave little room after a peak
    add = parts["synthetic (additive)"]
    print("\nsynthetic (additive), 3 sigmas at 2 evals or more, by evals per run:")
    for n in realshape.EVAL_COUNTS:
        c = ceiling([x for x in add if x.evals == n])
        print(f"  {n:3d} evals: {c['3 sigma, 2 evals']:.3f} of {c['hacking']}")
    print("synthetic (additive), 3 sigmas at 2 evals or more, by noise sigma:")
    for s in realshape.SIGMAS:
        c = ceiling([x for x in add if x.sigma == s])
        print(f"  sigma {s:.2f}: {c['3 sigma, 2 evals']:.3f} of {c['hacking']}")


if __name__ == "__main__":
    main()
