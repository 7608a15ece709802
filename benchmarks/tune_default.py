"""Choose the default stop rule (issue 11) on TUNING material only, then stop.

    python benchmarks/tune_default.py [--seed 0] [--runs 8] [--short-runs 50] [--out FILE]

(benchmarks/results/issue11/tune.txt: ``--runs 4``, the other options at their defaults.)

Material: ``realshape.synthetic(held_out=False)`` (the benchmark's tuning families plus the
new tuning shapes, 5-60 evals, additive noise at sigma 0.01-0.12 and pass rates over
N = 30..1000) and ``realshape.short_cells(held_out=False)`` (6-12-eval pass-rate runs, flat
or with a sustained drop of 4-8 sigmas that falls over one or two evals, after a flat or
rising start). The held-out material is never built here.

Candidates (third round): ``cusum-drop`` with a growing level window (``smooth_min=3``,
``smooth=15, trim=3``) over k in {1.25, 1.5}, clip in {2.5, 3}, h in {2, 2.25, 2.5, 3, 3.5,
4, 5, 6}, min_evals in {4, 5}, and the shift test (``shift=J,shift_m=M``, see
``detectors.shift_test``) off or with M in {2, 3} and J in {2.25, 2.5, 2.75, 3, 3.25, 3.5,
4} (960 candidates: the second round's 720 plus h in {2, 2.25}; the first round's pick,
the CUSUM alone at h=3, is among them). One
pass per (k, clip, M) records each run's CUSUM and shift statistic at every eval, from
which every (h, min_evals, J) is read off (a run stops at the first eval n >= min_evals
with CUSUM >= h or statistic >= J; it keeps its best eval so far).

Criterion, the first round's unchanged, fixed before the first run: with the noise
*stated* (eval_n=N on pass rates, sigma=S on additive cells; the issue's premise that
real evals are pass rates over N known prompts), keep the candidates with tuning
precision >= 0.97, harmful stops <= 1% of non-hacking runs, and on the short part recall
within 3 evals >= 0.90 with <= 2% of flat runs stopped; among them take the highest recall
(ties: more compute saved). If none passes, take the one with the smallest summed
shortfall against those four bars (ties: higher recall) and say so. The fleet and
own-noise figures of the pick come from ``benchmarks/judge_default.py`` (tuning part too),
not used to choose.

First round (issue 11, before the shift test): smooth in {9, 15}, k in {1, 1.25, 1.5},
clip in {2.5, 3}, h in {2, 2.5, 3, 3.5, 4, 5}, min_evals in {4, 5}, 144 candidates, none
passing; its pick (h=3, k=1.5, clip=2.5, smooth=15, min_evals=4) became the default. (A
wider pass over k = 0.75 and smooth = 25 at 2 runs per cell found none passing either.)
The second round was run after that default's held-out figures at seed 0 were known; the
held-out material is still never built here. Its outcome (``--runs 4``, seed 0): no
candidate passes; the smallest shortfall is the first round's pick, the CUSUM alone.

Third round: the tuning MATERIAL changed, not the criterion. Until then every tuning
short drop fell within one eval from a flat start, while half the held-out short drops
fall over two evals and half start from a rise (the lagging level makes such a drop look
1-3 sigmas smaller). So h=3 needed about three full-size evals and scored recall within 3
evals of 0.97 on tuning against 0.59-0.62 held out (seeds 0 and 1). The tuning short part
now has the same two shapes, drawn from its own streams (the held-out arrays are
unchanged). A leak to be honest about: the idea for the new tuning shapes came from those
held-out results, so seeds 0 and 1 no longer judge the pick; it was judged on a fresh
held-out seed 2. The grid gained h in {2, 2.25} (the first round's grid had h=2). Its
outcome (``--runs 4``, seed 0): no candidate passes; the smallest shortfall (0.112) is the
CUSUM alone at h=2.5, k=1.5, clip=3, min_evals=4 (P 0.874, R 0.638, harmful 2.4%, short
recall within 3 evals 0.897, flat runs stopped 0.3%), which became the default; the
first round's pick scores 0.384 on this material (short recall within 3 evals 0.585).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from evalstop.detbench import realshape
from evalstop.detbench.realshape_score import cell_spec
from evalstop.detectors import FleetNoise, canonical, make_detector
from evalstop.metrics.harm import harm

SMOOTH = (15,)
KS = (1.25, 1.5)
CLIPS = (2.5, 3.0)
HS = (2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0)
MIN_EVALS = (4, 5)
SHIFT_MS = (2, 3)
SHIFTS = (2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 4.0)  # and off
FIRST_ROUND_PICK = "cusum-drop:h=3,k=1.5,clip=2.5,smooth=15,min_evals=4,trim=3,smooth_min=3"
BARS = {"precision": 0.97, "harmful_rate": 0.01, "recall_within3": 0.90, "flat_stopped": 0.02}


def base_spec(smooth, k, clip, m):
    trim = 2 if smooth == 9 else (3 if smooth == 15 else 5)
    return (f"cusum-drop:h=1e300,k={k},clip={clip},smooth={smooth},min_evals=1,trim={trim},"
            f"smooth_min=3,shift=1e300,shift_m={m}")


def final_spec(spec, h, min_evals, shift):
    spec = spec.replace("h=1e300", f"h={h:g}").replace("min_evals=1", f"min_evals={min_evals}")
    if shift is None:
        return spec.split(",shift=")[0]
    return spec.replace("shift=1e300", f"shift={shift:g}")


def traces(spec, cells, mode):
    """Per cell: (runs, evals) CUSUM and shift statistics, and the best-eval index so far."""
    out = []
    for cell in cells:
        s = cell_spec(spec, cell, mode)
        fleet = FleetNoise(name=cell.group) if mode == "fleet" else None
        dets = [make_detector(s, fleet=fleet) for _ in range(cell.runs)]
        w = np.zeros((cell.runs, cell.evals))
        z = np.zeros((cell.runs, cell.evals))
        for j, row in enumerate(cell.eval.T.tolist()):
            for i, v in enumerate(row):
                dets[i].update_stop(j + 1, v)
                w[i, j], z[i, j] = dets[i].last_w, dets[i].last_z
        # earliest index of the running max (the detector keeps the earliest best)
        first = np.zeros((cell.runs, cell.evals), int)
        for j in range(1, cell.evals):
            better = cell.eval[:, j] > cell.eval[np.arange(cell.runs), first[:, j - 1]]
            first[:, j] = np.where(better, j, first[:, j - 1])
        out.append((w, z, first))
    return out


def figures(cells, trace, h, min_evals, shift=None):
    tp = fp = pos = neg = harmful = saved = total = 0
    w3 = drops = fs = flats = 0
    delays = []
    for cell, (w, z, first) in zip(cells, trace):
        hit = (w >= h) if shift is None else (w >= h) | (z >= shift)
        hit[:, : min_evals - 1] = False
        stopped = hit.any(axis=1)
        idx = np.where(stopped, hit.argmax(axis=1), 0)
        kept = first[np.arange(cell.runs), idx]
        hack = cell.hacking
        pos += int(hack.sum())
        neg += int((~hack).sum())
        tp += int((stopped & hack).sum())
        fp += int((stopped & ~hack).sum())
        delays += (idx - cell.true.argmax(axis=1))[stopped & hack].tolist()
        hm = harm(cell.true, stopped, idx, np.where(stopped, kept, 0), hack)
        harmful += int(hm.harmful.sum())
        saved += int(hm.saved_intervals.sum())
        total += int(hm.n_evals.sum())
        if cell.drop_idx is not None:
            d = cell.drop_idx
            drops += int((d >= 0).sum())
            w3 += int(((d >= 0) & stopped & (idx <= d + 2)).sum())
            flats += int((d < 0).sum())
            fs += int(((d < 0) & stopped).sum())
    r = (lambda a, b: a / b if b else float("nan"))
    out = {"precision": r(tp, tp + fp), "recall": r(tp, pos), "fpr": r(fp, neg),
           "harmful_rate": r(harmful, neg), "compute_saved": r(saved, total),
           "median_delay": float(np.median(delays)) if delays else float("nan")}
    if drops:
        out["recall_within3"], out["flat_stopped"] = r(w3, drops), r(fs, flats)
    return out


def shortfall(syn, short):
    return (max(0.0, BARS["precision"] - syn["precision"])
            + max(0.0, syn["harmful_rate"] - BARS["harmful_rate"])
            + max(0.0, BARS["recall_within3"] - short["recall_within3"])
            + max(0.0, short["flat_stopped"] - BARS["flat_stopped"]))


def line(row):
    s, sh = row["stated"]["synthetic"], row["stated"]["short"]
    print(f"    stated synthetic P {s['precision']:.3f} R {s['recall']:.3f} "
          f"FPR {s['fpr']:.3f} harmful {s['harmful_rate']:.3f} saved "
          f"{s['compute_saved']:.3f} delay {s['median_delay']:.1f} | short R3 "
          f"{sh['recall_within3']:.3f} flat {sh['flat_stopped']:.3f} | shortfall "
          f"{shortfall(s, sh):.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=8, help="runs per synthetic cell")
    ap.add_argument("--short-runs", type=int, default=50, help="runs per short cell")
    ap.add_argument("--out", default=None, help="write every candidate's figures as JSON")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    syn = realshape.synthetic(args.seed, args.runs, held_out=False)
    short = realshape.short_cells(args.seed, args.short_runs, held_out=False)
    assert all(c.part.endswith("tuning") for c in syn + short)
    print(f"tuning material: {sum(c.runs for c in syn)} synthetic runs in {len(syn)} cells, "
          f"{sum(c.runs for c in short)} short runs", flush=True)
    rows = []
    for smooth, k, clip, sm in itertools.product(SMOOTH, KS, CLIPS, SHIFT_MS):
        spec = base_spec(smooth, k, clip, sm)
        tr = {m: (traces(spec, syn, m), traces(spec, short, m)) for m in ("stated",)}
        # the CUSUM alone once per (k, clip), not once per shift_m
        shifts = SHIFTS if sm != SHIFT_MS[0] else (None, *SHIFTS)
        for h, me, j in itertools.product(HS, MIN_EVALS, shifts):
            row = {"spec": final_spec(spec, h, me, j)}
            for m, (ts, tsh) in tr.items():
                row[m] = {"synthetic": figures(syn, ts, h, me, j),
                          "short": figures(short, tsh, h, me, j)}
            rows.append(row)
        print(f"  smooth={smooth} k={k} clip={clip} shift_m={sm}: "
              f"{time.perf_counter() - t0:.0f}s", flush=True)

    def ok(row):
        s, sh = row["stated"]["synthetic"], row["stated"]["short"]
        return (s["precision"] >= BARS["precision"] and s["harmful_rate"] <= BARS["harmful_rate"]
                and sh["recall_within3"] >= BARS["recall_within3"]
                and sh["flat_stopped"] <= BARS["flat_stopped"])

    feasible = [r for r in rows if ok(r)]
    if feasible:
        pick = max(feasible, key=lambda r: (r["stated"]["synthetic"]["recall"],
                                            r["stated"]["synthetic"]["compute_saved"]))
        how = f"{len(feasible)} of {len(rows)} candidates pass every bar; highest recall"
    else:
        pick = min(rows, key=lambda r: (shortfall(r["stated"]["synthetic"],
                                                   r["stated"]["short"]),
                                         -r["stated"]["synthetic"]["recall"]))
        how = f"no candidate of {len(rows)} passes every bar; smallest summed shortfall"
    print(f"\npicked ({how}):\n  {pick['spec']}")
    line(pick)
    ranked = sorted(rows, key=lambda r: (shortfall(r["stated"]["synthetic"],
                                                   r["stated"]["short"]),
                                         -r["stated"]["synthetic"]["recall"]))
    print("\nthe ten smallest shortfalls:")
    for r in ranked[:10]:
        print(f"  {r['spec']}")
        line(r)
    first = [r for r in rows if canonical(r["spec"]) == canonical(FIRST_ROUND_PICK)]
    if first:
        print(f"\nfirst round's pick (the CUSUM alone):\n  {FIRST_ROUND_PICK}")
        line(first[0])
    if args.out:
        Path(args.out).write_text(json.dumps({"picked": pick["spec"], "how": how,
                                              "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
