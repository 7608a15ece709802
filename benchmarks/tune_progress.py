"""Choose ``plong`` (the progress-aware start of ``block-cusum``) on TUNING material only.

    python benchmarks/tune_progress.py [--seed 0] [--runs 20] [--long-runs 6] [--out DIR]

Writes ``progress_tune.json`` and ``progress_tune.md`` (default
``benchmarks/results/issue46``). Held-out material is never built here:
``benchmarks/judge_progress.py`` judges the pick once, at another seed.

Every rule is told each eval's progress, (j + 1) / evals, as a platform that knows the
run's length does. Candidates: the default, and the default with ``plong`` in
``PLONGS`` (with ``plong=L`` the gain gate ``gmin`` holds from the first eval of a run
whose expected eval count, evals so far / progress, is at least L). Material, as
``tune_failshapes.py`` (seed ``--seed``, tuning parts): the issue-46 failure shapes, long
(100-1,000 evals) and short (20-60 evals), and issue 21's long tuning runs at 1x, 2x and
4x; noise stated and not stated.

A value passes when, in both noise modes, the collapses' median delay is <= 2 evals after
the fall's start (long and short), dead runs are stopped >= 0.9 (long and short), and on
issue 21's long runs (1x) the tenant-harmful rate is no higher than the default's, its
catch rate at most 0.01 lower and its median delay at most 0.01 of the run longer, and its
false-stop rate at 2x and 4x within 0.01 of 1x (``tune_failshapes.py``'s bars, against the
default rather than issue 21's); where the default itself misses a bar, no further than it. Among those passing: the lowest mean harm on still-rising
runs (both modes), then on dips, then the larger ``plong`` (the option acts on fewer runs).

Second stage, for the pick: the bar ``BELOW_START`` (``block_cusum``: after ``hn`` evals a
long run that has not gained is stopped when it falls ``BELOW_START`` x ``gmin`` sigmas
below its start) in ``BELOWS``, also scored on the dense lab corpora's tuning parts
(``lab dense (bigram)``, ``lab dense small-gain (trigram, tuning part)``). Kept when the
harm on still-rising runs and dips (both modes) is no higher than with the bar off and the
bars above still hold; among those, the highest mean recall on the dense tuning parts,
then the lower bar. Writes ``progress_tune_below.json``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import evalstop.detectors.block_cusum as block_cusum
from evalstop.detbench.failshape_score import score_fail
from evalstop.detbench.longshape_score import score_long
from evalstop.detbench.realshape_score import score as score_cells
from evalstop.detectors import DEFAULT_SPEC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_failshapes import parse, tuning_args, tuning_mats

MODES = ("stated", "own")
PLONGS = (25, 50, 100, 200, 400)
BELOWS = (None, 1.0, 1.5, 2.0, 3.0)  # None: off (never below far enough)
DELAY_EVALS = 2.0
DEAD_STOPPED = 0.9
CAUGHT_SLACK = 0.01
DELAY_SLACK = 0.01
FREQ_MARGIN = 0.01


def spec_of(plong: int) -> str:
    return DEFAULT_SPEC if plong == 0 else f"{DEFAULT_SPEC},plong={plong}"


def score(spec: str, mats: dict) -> dict:
    return {mode: {"long": score_fail(spec, mats["long"], mode, progress=True),
                   "short": score_fail(spec, mats["short"], mode, progress=True),
                   "rule21": score_long(spec, mats["rule21"], mode, progress=True)}
            for mode in MODES}


def shortfalls(row: dict, base: dict) -> dict[str, float]:
    out = {}
    for mode in MODES:
        r, b = row[mode], base[mode]["rule21"]["by_freq"]["1"]
        for part in ("long", "short"):
            d = r[part]["collapse"]["delay_evals_median"]
            out[f"{mode}.{part}.collapse_delay"] = (1.0 if d is None
                                                    else max(0.0, (d - DELAY_EVALS) / 10))
            out[f"{mode}.{part}.dead"] = max(0.0, DEAD_STOPPED - r[part]["dead"]["stopped"])
        t = r["rule21"]["by_freq"]
        one = t["1"]
        out[f"{mode}.rule21.harm"] = max(0.0, one["tenant_harmful"] - b["tenant_harmful"])
        out[f"{mode}.rule21.caught"] = max(0.0, b["caught"] - CAUGHT_SLACK - one["caught"])
        out[f"{mode}.rule21.delay"] = max(0.0, (one["delay_share_median"] or 1.0)
                                          - b["delay_share_median"] - DELAY_SLACK)
        for f in ("2", "4"):
            out[f"{mode}.rule21.false_stop_{f}x"] = max(
                0.0, t[f]["false_stop"] - one["false_stop"] - FREQ_MARGIN)
    return out


def mean(row: dict, fam: str) -> float:
    return sum(row[m]["long"][fam]["tenant_harmful"] for m in MODES) / len(MODES)


def line(row: dict, name: str | None = None) -> str:
    parts = [name or (f"plong={row['plong']}" if row["plong"] else "default")]
    for m in MODES:
        lg, sh, t = row[m]["long"], row[m]["short"], row[m]["rule21"]["by_freq"]
        parts.append(
            f"{m}: rising {lg['rising']['tenant_harmful']:.3f}"
            f" ({lg['rising']['tenant_harmful_early']:.3f} early)"
            f" dip {lg['dip']['tenant_harmful']:.3f}"
            f" collapse {lg['collapse']['stopped']:.2f}/{lg['collapse']['delay_evals_median']}"
            f" (short {sh['collapse']['stopped']:.2f}/{sh['collapse']['delay_evals_median']})"
            f" dead {lg['dead']['stopped']:.2f}/{sh['dead']['stopped']:.2f}"
            f" | rule21 harm {t['1']['tenant_harmful']:.3f} caught {t['1']['caught']:.3f}"
            f" delay {t['1']['delay_share_median'] or -1:.3f}"
            f" fs {t['1']['false_stop']:.3f}/{t['2']['false_stop']:.3f}"
            f"/{t['4']['false_stop']:.3f}")
    return " | ".join(parts)


def main(argv=None):
    args, out = parse(tuning_args(__doc__.splitlines()[0]), argv)
    t0 = time.perf_counter()
    mats = tuning_mats(args.seed, args.runs, args.long_runs, freqs=(1, 2, 4))
    rows = []
    for plong in (0, *PLONGS):
        rows.append({"plong": plong, "spec": spec_of(plong), **score(spec_of(plong), mats)})
        print(f"{time.perf_counter() - t0:6.0f}s {line(rows[-1])}", flush=True)
    base = rows[0]
    own = shortfalls(base, base)  # where the default itself misses a bar
    for r in rows:
        r["shortfalls"] = {k: max(0.0, v - own[k]) for k, v in shortfalls(r, base).items()}
        r["shortfall"] = sum(r["shortfalls"].values())
    passing = [r for r in rows[1:] if r["shortfall"] == 0.0]
    if passing:
        pick = min(passing, key=lambda r: (mean(r, "rising"), mean(r, "dip"), -r["plong"]))
        verdict = f"{len(passing)} of {len(PLONGS)} values of plong meet every bar"
    else:
        pick = min(rows[1:], key=lambda r: (r["shortfall"], -r["plong"]))
        verdict = f"none of {len(PLONGS)} values meets every bar: smallest summed shortfall"
    print(verdict, "\npick:", pick["spec"], flush=True)
    result = {"seed": args.seed, "runs": args.runs, "long_runs": args.long_runs,
              "progress": "each eval's (j + 1) / evals", "default": DEFAULT_SPEC,
              "rows": rows, "verdict": verdict, "pick": pick["spec"],
              "pick_plong": pick["plong"], "wall_s": round(time.perf_counter() - t0, 1)}
    (out / "progress_tune.json").write_text(json.dumps(result, indent=1))
    lines = [f"Tuning material only (seed {args.seed}, {args.runs} runs per failshape cell, "
             f"{args.long_runs} per issue-21 long cell at 1x/2x/4x); every rule is told each "
             "eval's progress.", "", f"Default: `{DEFAULT_SPEC}`", "",
             f"{verdict}; pick `plong={pick['plong']}`", "", "```"]
    lines += [line(r) + f" | shortfall {r['shortfall']:.3f}" for r in rows]
    (out / "progress_tune.md").write_text("\n".join(lines + ["```", ""]))
    below_stage(pick, base, mats, out)


def dense_tuning_cells() -> list:
    from judge_long_default import dense_lab_cells, small_gain_cells

    cells = [(n, c) for n, c in dense_lab_cells() if "tuning part" in n]
    cells += small_gain_cells(roles=("tuning",))
    assert all("tuning part" in n for n, _ in cells)
    return cells


def below_stage(pick: dict, base: dict, mats: dict, out: Path) -> None:
    dense = dense_tuning_cells()
    kept = block_cusum.BELOW_START
    rows = []
    try:
        for below in BELOWS:
            block_cusum.BELOW_START = math.inf if below is None else below
            row = {"below": below, **score(pick["spec"], mats)}
            row["dense"] = {m: {n: score_cells(pick["spec"], [c], m, progress=True)
                                for n, c in dense} for m in MODES}
            row["dense_recall"] = sum(d["recall"] for m in MODES
                                      for d in row["dense"][m].values()) / (2 * len(dense))
            row["shortfall"] = sum(max(0.0, v - o) for v, o in zip(
                shortfalls(row, base).values(), shortfalls(base, base).values()))
            rows.append(row)
            print(f"below={below} {line({**row, 'plong': pick['plong']})} | dense recall "
                  + " ".join(f"{m}:{n.split('(')[1][:-1]}={d['recall']:.3f}"
                             for m in MODES for n, d in row["dense"][m].items()), flush=True)
    finally:
        block_cusum.BELOW_START = kept
    off = rows[0]
    ok = [r for r in rows[1:] if r["shortfall"] == 0.0
          and all(r[m]["long"][f]["tenant_harmful"] <= off[m]["long"][f]["tenant_harmful"]
                  for m in MODES for f in ("rising", "dip"))]
    choice = max(ok, key=lambda r: (r["dense_recall"], -r["below"])) if ok else off
    print("below pick:", choice["below"], flush=True)
    (out / "progress_tune_below.json").write_text(json.dumps(
        {"spec": pick["spec"], "rows": rows, "pick_below": choice["below"]}, indent=1))


if __name__ == "__main__":
    main()
