"""Choose the default stop rule (issue 11) on TUNING material only, then stop.

    python benchmarks/tune_default.py [--seed 0] [--runs 8] [--out DIR]

Material: ``realshape.synthetic(held_out=False)`` (the benchmark's tuning families plus the
new tuning shapes, 5-60 evals, additive noise at sigma 0.01-0.12 and pass rates over
N = 30..1000) and ``realshape.short_cells(held_out=False)`` (6-12-eval pass-rate runs, flat
or with a sustained drop of 4-8 sigmas). The held-out material is never built here.

Candidates: ``cusum-drop`` with a growing level window (``smooth_min=3``) over
smooth in {9, 15}, k in {1, 1.25, 1.5}, clip in {2.5, 3}, h in {2, 2.5, 3, 3.5, 4,
5}, min_evals in {4, 5}; and the current default for reference. One pass per (smooth, k,
clip, noise mode) records each run's CUSUM at every eval, from which every (h, min_evals)
is read off (a run stops at the first eval n >= min_evals with CUSUM >= h; it keeps its
best eval so far).

Criterion, fixed before the first run: with the noise *stated* (eval_n=N on pass rates,
sigma=S on additive cells; the issue's premise that real evals are pass rates over N known
prompts), keep the candidates with tuning precision >= 0.97, harmful stops <= 1% of
non-hacking runs, and on the short part recall within 3 evals >= 0.90 with <= 2% of flat
runs stopped; among them take the highest recall (ties: more compute saved). If none
passes, take the one with the smallest summed shortfall against those four bars and say
so. The fleet and own-noise figures of the pick come from ``benchmarks/judge_default.py``
(tuning part too), not used to choose. (A first, wider pass over k = 0.75 and smooth = 25
at 2 runs per cell found no candidate passing every bar either; it took 7 min, so the grid
was narrowed to the region its best candidates came from.)
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
from evalstop.detectors import FleetNoise, make_detector
from evalstop.metrics.harm import harm

SMOOTH = (9, 15)
KS = (1.0, 1.25, 1.5)
CLIPS = (2.5, 3.0)
HS = (2.0, 2.5, 3.0, 3.5, 4.0, 5.0)
MIN_EVALS = (4, 5)
BARS = {"precision": 0.97, "harmful_rate": 0.01, "recall_within3": 0.90, "flat_stopped": 0.02}


def base_spec(smooth, k, clip):
    trim = 2 if smooth == 9 else (3 if smooth == 15 else 5)
    return (f"cusum-drop:h=1e300,k={k},clip={clip},smooth={smooth},min_evals=1,trim={trim},"
            f"smooth_min=3")


def traces(spec, cells, mode):
    """Per cell: (runs, evals) CUSUM values, and the best-eval index so far."""
    out = []
    for cell in cells:
        s = cell_spec(spec, cell, mode)
        fleet = FleetNoise(name=cell.group) if mode == "fleet" else None
        dets = [make_detector(s, fleet=fleet) for _ in range(cell.runs)]
        w = np.zeros((cell.runs, cell.evals))
        for j, row in enumerate(cell.eval.T.tolist()):
            for i, v in enumerate(row):
                dets[i].update_stop(j + 1, v)
                w[i, j] = dets[i].last_w
        # earliest index of the running max (the detector keeps the earliest best)
        first = np.zeros((cell.runs, cell.evals), int)
        for j in range(1, cell.evals):
            better = cell.eval[:, j] > cell.eval[np.arange(cell.runs), first[:, j - 1]]
            first[:, j] = np.where(better, j, first[:, j - 1])
        out.append((w, first))
    return out


def figures(cells, trace, h, min_evals):
    tp = fp = pos = neg = harmful = saved = total = 0
    w3 = drops = fs = flats = 0
    delays = []
    for cell, (w, first) in zip(cells, trace):
        hit = (w >= h)
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
    for smooth, k, clip in itertools.product(SMOOTH, KS, CLIPS):
        spec = base_spec(smooth, k, clip)
        tr = {m: (traces(spec, syn, m), traces(spec, short, m)) for m in ("stated",)}
        for h, me in itertools.product(HS, MIN_EVALS):
            final = spec.replace("h=1e300", f"h={h:g}").replace("min_evals=1",
                                                                  f"min_evals={me}")
            row = {"spec": final}
            for m, (ts, tsh) in tr.items():
                row[m] = {"synthetic": figures(syn, ts, h, me),
                          "short": figures(short, tsh, h, me)}
            rows.append(row)
        print(f"  smooth={smooth} k={k} clip={clip}: {time.perf_counter() - t0:.0f}s",
              flush=True)

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
    for m in ("stated",):
        s, sh = pick[m]["synthetic"], pick[m]["short"]
        print(f"  {m:6s} synthetic P {s['precision']:.3f} R {s['recall']:.3f} "
              f"FPR {s['fpr']:.3f} harmful {s['harmful_rate']:.3f} saved "
              f"{s['compute_saved']:.3f} delay {s['median_delay']:.1f} | short R3 "
              f"{sh['recall_within3']:.3f} flat {sh['flat_stopped']:.3f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"picked": pick["spec"], "how": how,
                                              "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
