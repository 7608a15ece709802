"""Why the default still stops still-rising runs whose level wanders: what the options that
act after 20 evals buy on them, what they cost issue 21's catches, and what a run shows
before such a stop. TUNING material only; nothing here is chosen or judged.

    python benchmarks/wander_frontier.py [--seed 0] [--runs 20] [--out DIR] [--figures DIR]

Writes ``frontier.json`` and ``frontier.md`` (default ``benchmarks/results/issue46``) and
``frontier.png`` (copied to ``--figures``, default ``docs/figures/issue46``).

Material, noise stated (``eval_n=N``): the issue-46 failure shapes' tuning part
(``failshape.fail_cells(held_out=False)``, still-rising and recovering-dip runs of 100-1,000
evals, an AR(1) wander of the level with a stationary sd of 1-15% of the gain) and issue
21's long tuning runs at 1x (``longshape.long_cells(held_out=False)``: hacking runs that
fall to 40-85% of their peak gain, a wander of at most 4% of the gain), both at ``--seed``.

1. **The frontier.** The default with each setting of the options that can take a stop
   away after the 20th eval: ``last`` (a fall must last a share of the run) in {0, 0.1,
   0.2, 0.3, 0.5}, ``wander`` (a fall must be W times the level's measured wander) in {0, 2,
   4} and ``lags`` (the widest lag, in blocks, of the block noise) in {4, 8}. Per setting:
   the still-rising runs stopped with a smoothed loss above 5% of their gain, in all and
   after the 20th eval (the part these options act on; before it the default is the
   short-run rule, which a run's first evals cannot be told apart from without progress);
   the same for dips; and issue 21's catch rate and median delay. The setting with the
   least still-rising harm whose catch rate on issue 21's runs stays at its target (0.90;
   ties: the smaller ``last``, then ``wander``) is named ``wandering_pick``: a choice for a
   platform whose runs wander, at a cost in catches that the default does not pay (its
   table is to stay as it is); ``judge_failshapes.py --candidate`` and
   ``judge_long_default.py --candidate`` judge it once on held-out material.
2. **The evidence before a stop.** For each still-rising run that the default stops
   harmfully after its 20th eval, and for each hacking run of issue 21 it catches after its
   20th eval: the deepest dip of the run's level (its evals smoothed over 1/8 of the run so
   far) that it had recovered from before the stop, as a share of the fall at the stop. A
   rule can only tell a wander from a fall by the wander it has seen; this is how much of
   it a run has shown by then.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from evalstop.detbench.failshape import fail_cells
from evalstop.detbench.failshape_score import EARLY, run_cell
from evalstop.detbench.longshape import long_cells
from evalstop.detbench.longshape_score import score_long
from evalstop.detbench.realshape_score import run_cell as run_long_cell
from evalstop.detectors import DEFAULT_SPEC
from evalstop.metrics.tenant_harm import tenant_harm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_long_default import with_option

LASTS = (0.0, 0.1, 0.2, 0.3, 0.5)
WANDERS = (0.0, 2.0, 4.0)
LAGS = (4, 8)
MODE = "stated"
CAUGHT_TARGET = 0.90  # issue 21's bar on its long runs


def setting(last: float, wander: float, lags: int) -> str:
    spec = with_option(DEFAULT_SPEC, "last", f"{last:g}")
    spec = with_option(spec, "wander", f"{wander:g}")
    return with_option(spec, "lags", str(lags))


def harm_rows(spec: str, cells) -> dict:
    """Harmful stops in all and after the first EARLY evals, over the cells."""
    harmful = late = runs = 0
    for c in cells:
        stopped, stop_idx, kept_idx, _ = run_cell(spec, c, MODE)
        th = tenant_harm(c.eval, stopped, kept_idx, c.hacking)
        harmful += int(th.harmful.sum())
        late += int((th.harmful & (stop_idx >= EARLY)).sum())
        runs += c.runs
    return {"harmful": harmful / runs, "harmful_late": late / runs, "runs": runs}


def score_setting(args) -> dict:
    (last, wander, lags), mats = args
    spec = setting(last, wander, lags)
    r21 = score_long(spec, mats["rule21"], MODE)
    return {"last": last, "wander": wander, "lags": lags, "spec": spec,
            "rising": harm_rows(spec, mats["rising"]), "dip": harm_rows(spec, mats["dip"]),
            "rule21": {"caught": r21["caught"], "delay": r21["delay_share_median"],
                       "tenant_harmful": r21["tenant_harmful"]}}


def smoothed(values: np.ndarray) -> np.ndarray:
    """The level: the evals' running mean over 1/8 of them (at least 3)."""
    w = max(3, len(values) // 8)
    return np.convolve(values, np.ones(w) / w, mode="valid")


def recovered_dip(level: np.ndarray) -> float:
    """The deepest dip of ``level`` that it rose above its former best after."""
    best, top, dip = 0.0, level[0], 0.0
    for v in level[1:]:
        if v > top:
            best, top, dip = max(best, dip), v, 0.0
        else:
            dip = max(dip, top - v)
    return best


def evidence(spec: str, cells, want_hacking: bool) -> list[float]:
    """Per late stop of the kind wanted (harmful on non-hacking runs, caught on hacking
    runs): the recovered dip before the stop as a share of the fall at the stop."""
    out = []
    for c in cells:
        if want_hacking:
            stopped, stop_idx, kept_idx = run_long_cell(spec, c, MODE)
            pick = stopped & c.hacking & (stop_idx >= EARLY)
        else:
            stopped, stop_idx, kept_idx, _ = run_cell(spec, c, MODE)
            th = tenant_harm(c.eval, stopped, kept_idx, c.hacking)
            pick = th.harmful & (stop_idx >= EARLY)
        for i in np.flatnonzero(pick):
            level = smoothed(c.eval[i, :stop_idx[i] + 1])
            top = int(np.argmax(level))
            fall = float(level[top] - level[-1])
            out.append(recovered_dip(level[:top + 1]) / fall if fall > 0 else float("inf"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=20, help="runs per failure-shape cell")
    ap.add_argument("--long-runs", type=int, default=6, help="runs per issue-21 cell")
    ap.add_argument("--out", default="benchmarks/results/issue46")
    ap.add_argument("--figures", default="docs/figures/issue46")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mats = {"rising": fail_cells(args.seed, args.runs, held_out=False, families=("rising",)),
            "dip": fail_cells(args.seed, args.runs, held_out=False, families=("dip",)),
            "rule21": long_cells(args.seed, args.long_runs, held_out=False, freqs=(1,))}
    grid = list(itertools.product(LASTS, WANDERS, LAGS))
    with ProcessPoolExecutor(args.workers) as ex:
        rows = []
        for i, row in enumerate(ex.map(score_setting, [(g, mats) for g in grid])):
            rows.append(row)
            print(f"[{i + 1}/{len(grid)}] {line(row)}", flush=True)
    base = next(r for r in rows if r["last"] == 0 and r["wander"] == 0 and r["lags"] == 4)
    keep = [r for r in rows if r["rule21"]["caught"] >= base["rule21"]["caught"] - 0.01]
    ev = {"rising_harmful": evidence(DEFAULT_SPEC, mats["rising"], False),
          "rule21_caught": evidence(DEFAULT_SPEC, mats["rule21"], True)}
    result = {"seed": args.seed, "noise": MODE, "default": base, "rows": rows,
              "least_rising_harm_keeping_catches": min(
                  keep, key=lambda r: r["rising"]["harmful"]),
              "wandering_pick": min(
                  (r for r in rows if r["rule21"]["caught"] >= CAUGHT_TARGET),
                  key=lambda r: (r["rising"]["harmful"], r["last"], r["wander"])),
              "evidence": {k: summary(v) for k, v in ev.items()}}
    (out / "frontier.json").write_text(json.dumps(result, indent=1))
    (out / "frontier.md").write_text(report(result))
    print(report(result))
    plot(rows, base, ev, out / "frontier.png")
    figs = Path(args.figures)
    figs.mkdir(parents=True, exist_ok=True)
    shutil.copy(out / "frontier.png", figs / "frontier.png")


def summary(shares: list[float]) -> dict:
    a = np.asarray(shares, float)
    return {"stops": len(a),
            "no_dip_half_the_fall": float(np.mean(a < 0.5)) if len(a) else None,
            "median": float(np.median(a)) if len(a) else None}


def line(r: dict) -> str:
    return (f"last={r['last']:g} wander={r['wander']:g} lags={r['lags']}: still rising "
            f"{r['rising']['harmful']:.3f} (after 20 evals {r['rising']['harmful_late']:.3f})"
            f", dips {r['dip']['harmful']:.3f} ({r['dip']['harmful_late']:.3f}); issue 21 "
            f"caught {r['rule21']['caught']:.3f}, delay {r['rule21']['delay'] or -1:.3f}")


def report(result: dict) -> str:
    best = result["least_rising_harm_keeping_catches"]
    ev = result["evidence"]
    lines = [f"Tuning material only (seed {result['seed']}, noise stated). Nothing is "
             "chosen here.", "", "```"] + [line(r) for r in result["rows"]] + ["```", "",
             f"The default: {line(result['default'])}", "",
             f"Least still-rising harm with issue 21's catches within 0.01: {line(best)}", "",
             f"Least still-rising harm with issue 21's catches >= {CAUGHT_TARGET:g} "
             f"(the wandering pick): {line(result['wandering_pick'])}", "",
             f"`{result['wandering_pick']['spec']}`", "",
             "Before a late stop, the deepest dip the run had recovered from, as a share of "
             "the fall at the stop (median; share of stops under half the fall): "
             f"still-rising runs stopped harmfully {_f(ev['rising_harmful']['median'])} "
             f"({_f(ev['rising_harmful']['no_dip_half_the_fall'])}, "
             f"{ev['rising_harmful']['stops']} stops); issue 21's hacking runs caught "
             f"{_f(ev['rule21_caught']['median'])} "
             f"({_f(ev['rule21_caught']['no_dip_half_the_fall'])}, "
             f"{ev['rule21_caught']['stops']} stops).", ""]
    return "\n".join(lines)


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def plot(rows: list[dict], base: dict, ev: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6))
    for lags, marker in zip(LAGS, ("o", "s")):
        for wander, colour in zip(WANDERS, ("C0", "C1", "C2")):
            pts = sorted((r for r in rows if r["lags"] == lags and r["wander"] == wander),
                         key=lambda r: r["last"])
            a.plot([r["rule21"]["caught"] for r in pts],
                   [100 * r["rising"]["harmful_late"] for r in pts], marker=marker, color=colour,
                   ls="-" if lags == 4 else ":", label=f"wander={wander:g}, lags={lags}")
    a.plot([base["rule21"]["caught"]], [100 * base["rising"]["harmful_late"]], "k*", ms=14,
           label="default (last=0)")
    a.axhline(1.0, color="red", lw=1)
    a.text(0.32, 1.1, "target: 1% harmful (all stops)", color="red", fontsize=8)
    a.axvline(base["rule21"]["caught"] - 0.01, color="grey", lw=1, ls="--")
    a.axvline(0.90, color="red", lw=1, ls=":")
    a.set_xlabel("issue 21's long hacking runs caught (tuning, 1x; dashed: the default's "
                 "- 0.01, dotted: 0.90)")
    early = 100 * (base["rising"]["harmful"] - base["rising"]["harmful_late"])
    a.set_ylabel("still-rising runs stopped after eval 20\nwith loss > 5% of gain (%)")
    a.set_title(f"Each line: last = 0, 0.1, 0.2, 0.3, 0.5 (right to left); every setting "
                f"adds {early:.1f}%\nstopped in the first 20 evals (the short-run rule)",
                fontsize=9)
    a.legend(fontsize=7, loc="upper left")
    a.set_ylim(bottom=0)
    bins = np.linspace(0, 1.5, 16)
    for key, label, colour in (("rising_harmful", "still rising, stopped harmfully", "C3"),
                               ("rule21_caught", "issue 21 hacking, caught", "C0")):
        v = np.clip(np.asarray(ev[key], float), 0, 1.5)
        b.hist(v, bins=bins, alpha=0.6, color=colour, density=True,
               label=f"{label} ({len(v)} stops after eval 20)")
    b.set_xlabel("deepest dip recovered from before the stop / fall at the stop")
    b.set_ylabel("density")
    b.set_title("What a run had shown of its wander when the default stopped it", fontsize=9)
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
