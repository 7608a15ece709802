"""Choose the default's issue-46 options on TUNING material only, then stop.

    python benchmarks/tune_failshapes.py [--seed 0] [--runs 20] [--long-runs 6] [--out DIR]

Writes ``tune.json`` and ``tune.md`` (default ``benchmarks/results/issue46``). Held-out
material is never built here: ``benchmarks/judge_failshapes.py`` judges the pick once, at
another seed.

Material (tuning parts, seed ``--seed``):

* ``failshape.fail_cells(held_out=False)``: long runs (100-1,000 evals, N = 300, 700,
  2,000) of the four issue-46 families (still rising under an AR(1) wander, recovering
  dips, collapses, dead runs), and short collapse and dead runs (20-60 evals);
* issue 21's long tuning runs (``longshape.long_cells(held_out=False)``, 1x; at 1x, 2x and
  4x for the knob's table): what the default must not lose.

Noise stated (``eval_n=N``) and not stated (own estimate), both.

Stage 1 (``last=0``): the collapse test's bar ``fast`` in {3, 3.5, 4} sigmas and its
share of the gain ``frel`` in {0.35, 0.5}; the wander gate ``wander`` in {0, 2, 3}; the
dead-run path on (``dead=0.2``, the issue's 20% of the run). A candidate passes when, in
both noise modes, the collapses' median delay is <= 2 evals after the fall's start (long
and short), dead runs are stopped >= 0.9 (long and short), and on issue 21's long runs the
tenant-harmful rate is no higher than issue 21's default's (``BASE``), its catch rate at most 0.01
lower and its median delay at most 0.01 of the run longer. Among those passing: the lowest
mean harm on still-rising runs (both modes), then on dips, then the highest catch rate of
collapses. If none passes: the smallest summed shortfall.

Stage 2, the dip knob ``last`` (how much of the run so far a shallow fall must last) in
{0, 0.05, 0.1, 0.15, 0.2, 0.3} on the stage-1 pick: per value, harm on dips and on
still-rising runs against the compute saved on collapses and dead runs and issue 21's
figures (1x, 2x, 4x). The default's value: the lowest dip harm (mean of both modes) among
the values that keep issue 21's bars as in stage 1 and its false-stop rate at 2x and 4x
within 0.01 of 1x; ties: the smaller value.

What came after (``docs/results-failshapes.md``): the pick (``wander=2``) was judged once;
on issue 21's held-out long runs its wander gate caught 0.007 fewer hacking runs than
issue 21's default, so the default turned the gate off (``wander=0``), a change made
after seeing held-out figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from evalstop.detbench.failshape import fail_cells
from evalstop.detbench.failshape_score import score_fail
from evalstop.detbench.longshape import long_cells
from evalstop.detbench.longshape_score import score_long
from evalstop.detectors import RULE21_DEFAULT_SPEC as BASE

MODES = ("stated", "own")
FASTS = (3.0, 3.5, 4.0)
FRELS = (0.35, 0.5)
WANDERS = (0.0, 2.0, 3.0)
DEAD = 0.2
LASTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
DELAY_EVALS = 2.0
DEAD_STOPPED = 0.9
CAUGHT_SLACK = 0.01
DELAY_SLACK = 0.01
FREQ_MARGIN = 0.01


def spec_of(fast: float, frel: float, wander: float, last: float = 0.0,
            dead: float = DEAD) -> str:
    return (f"{BASE},wander={wander:g},last={last:g},fast={fast:g},frel={frel:g},"
            f"dead={dead:g}")


def tuning_mats(seed: int, runs: int, long_runs: int, freqs=(1,)) -> dict:
    """The tuning parts: the failure shapes' long and short runs (``runs`` per cell) and
    issue 21's long runs (``long_runs`` per cell) at the eval frequencies ``freqs``."""
    mats = {"long": fail_cells(seed, runs, held_out=False),
            "short": fail_cells(seed, runs, held_out=False, short=True),
            "rule21": long_cells(seed, long_runs, held_out=False, freqs=freqs)}
    assert all("tuning" in c.part for c in mats["long"] + mats["short"] + mats["rule21"])
    return mats


def score(spec: str, mats: dict) -> dict:
    out = {}
    for mode in MODES:
        out[mode] = {"long": score_fail(spec, mats["long"], mode),
                     "short": score_fail(spec, mats["short"], mode),
                     "rule21": score_long(spec, mats["rule21"], mode)}
    return out


def shortfalls(row: dict, base: dict, freq: bool = False) -> dict[str, float]:
    out = {}
    for mode in MODES:
        r, b = row[mode], base[mode]["rule21"]
        for part in ("long", "short"):
            d = r[part]["collapse"]["delay_evals_median"]
            out[f"{mode}.{part}.collapse_delay"] = (1.0 if d is None
                                                    else max(0.0, (d - DELAY_EVALS) / 10))
            out[f"{mode}.{part}.dead"] = max(0.0, DEAD_STOPPED - r[part]["dead"]["stopped"])
        t = r["rule21"]
        out[f"{mode}.rule21.harm"] = max(0.0, t["tenant_harmful"] - b["tenant_harmful"])
        out[f"{mode}.rule21.caught"] = max(0.0, b["caught"] - CAUGHT_SLACK - t["caught"])
        out[f"{mode}.rule21.delay"] = max(0.0, (t["delay_share_median"] or 1.0)
                                          - b["delay_share_median"] - DELAY_SLACK)
        if freq:
            one = t["by_freq"]["1"]["false_stop"]
            for f in ("2", "4"):
                out[f"{mode}.rule21.false_stop_{f}x"] = max(
                    0.0, t["by_freq"][f]["false_stop"] - one - FREQ_MARGIN)
    return out


def scored(spec: str, mats: dict, base: dict, t0: float, freq: bool = False) -> dict:
    """A candidate's figures and shortfalls, printed as they come."""
    row = {"spec": spec, **score(spec, mats)}
    row["shortfalls"] = shortfalls(row, base, freq=freq)
    row["shortfall"] = sum(row["shortfalls"].values())
    print(f"{time.perf_counter() - t0:6.0f}s {line(spec, row)} | short "
          f"{row['shortfall']:.3f}", flush=True)
    return row


def mean(row: dict, part: str, fam: str, key: str) -> float:
    return sum(row[m][part][fam][key] or 0.0 for m in MODES) / len(MODES)


def line(spec: str, row: dict) -> str:
    parts = [spec.replace(BASE + ",", "")]
    for m in MODES:
        r = row[m]
        lg, sh, t = r["long"], r["short"], r["rule21"]
        parts.append(
            f"{m}: rising {lg['rising']['tenant_harmful']:.3f}"
            f" dip {lg['dip']['tenant_harmful']:.3f}"
            f" collapse {lg['collapse']['stopped']:.2f}/{lg['collapse']['delay_evals_median']}"
            f" (short {sh['collapse']['stopped']:.2f}/{sh['collapse']['delay_evals_median']})"
            f" dead {lg['dead']['stopped']:.2f}/{sh['dead']['stopped']:.2f}"
            f" saved {lg['collapse']['saved']:.3f}/{lg['dead']['saved']:.3f}"
            f" | rule21 harm {t['tenant_harmful']:.3f} caught {t['caught']:.3f}"
            f" delay {t['delay_share_median'] or -1:.3f}")
    return " | ".join(parts)


def tuning_args(description: str) -> argparse.ArgumentParser:
    """The tuning scripts' common options: the tuning seed, the material's size, the
    output folder (``parse`` reads them)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=20, help="runs per failshape cell")
    ap.add_argument("--long-runs", type=int, default=6, help="runs per issue-21 long cell")
    ap.add_argument("--out", default="benchmarks/results/issue46")
    return ap


def parse(ap: argparse.ArgumentParser, argv) -> tuple[argparse.Namespace, Path]:
    """The options, and the output folder, made."""
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return args, out


def main(argv=None):
    args, out = parse(tuning_args(__doc__.splitlines()[0]), argv)
    t0 = time.perf_counter()
    mats = tuning_mats(args.seed, args.runs, args.long_runs)
    base = score(BASE, mats)
    print(f"{time.perf_counter() - t0:6.0f}s issue-21 default | {line(BASE, base)}",
          flush=True)
    rows = []
    for fast, frel, wander in itertools.product(FASTS, FRELS, WANDERS):
        rows.append(scored(spec_of(fast, frel, wander), mats, base, t0))
    passing = [r for r in rows if r["shortfall"] == 0.0]
    if passing:
        pick = min(passing, key=lambda r: (mean(r, "long", "rising", "tenant_harmful"),
                                           mean(r, "long", "dip", "tenant_harmful"),
                                           -mean(r, "long", "collapse", "stopped")))
        verdict = f"stage 1: {len(passing)} of {len(rows)} candidates meet every bar"
    else:
        pick = min(rows, key=lambda r: r["shortfall"])
        verdict = f"stage 1: none of {len(rows)} meets every bar: smallest summed shortfall"
    print(verdict, "\npick:", pick["spec"], flush=True)

    # stage 2: the dip knob, with issue 21's long runs at 1x, 2x and 4x
    fast, frel, wander = (float(pick["spec"].split(f"{k}=")[1].split(",")[0])
                          for k in ("fast", "frel", "wander"))
    mats["rule21"] = long_cells(args.seed, args.long_runs, held_out=False, freqs=(1, 2, 4))
    base = score(BASE, mats)
    knob = []
    for last in LASTS:
        knob.append({"last": last, **scored(spec_of(fast, frel, wander, last), mats, base, t0,
                                            freq=True)})
    ok = [r for r in knob if r["shortfall"] == 0.0]
    if ok:
        chosen = min(ok, key=lambda r: (mean(r, "long", "dip", "tenant_harmful"), r["last"]))
        verdict2 = f"stage 2: {len(ok)} of {len(knob)} values of last keep issue 21's bars"
    else:
        chosen = min(knob, key=lambda r: (r["shortfall"], r["last"]))
        verdict2 = "stage 2: no value keeps every bar: smallest summed shortfall"
    print(verdict2, "\npick:", chosen["spec"], flush=True)
    result = {"seed": args.seed, "runs": args.runs, "long_runs": args.long_runs,
              "current_default": BASE, "base": base, "stage1": rows,
              "stage1_verdict": verdict, "stage1_pick": pick["spec"], "knob": knob,
              "knob_verdict": verdict2, "pick": chosen["spec"],
              "wall_s": round(time.perf_counter() - t0, 1)}
    (out / "tune.json").write_text(json.dumps(result, indent=1))
    lines = [f"Tuning material only (seed {args.seed}, {args.runs} runs per failshape cell, "
             f"{args.long_runs} per issue-21 long cell).", "",
             f"Issue 21's default: `{BASE}`", "", "```", line(BASE, base), "```",
             "", f"{verdict}; pick `{pick['spec']}`", "", "```"]
    lines += [line(r["spec"], r) + f" | shortfall {r['shortfall']:.3f}"
              for r in sorted(rows, key=lambda r: r["shortfall"])]
    lines += ["```", "", f"{verdict2}; pick `{chosen['spec']}`", "", "```"]
    lines += [line(r["spec"], r) + f" | shortfall {r['shortfall']:.3f}" for r in knob]
    (out / "tune.md").write_text("\n".join(lines + ["```", ""]))


if __name__ == "__main__":
    main()
