"""Judge the default ONCE on held-out issue-46 material, and draw the plots.

    python benchmarks/judge_failshapes.py [--seed 1] [--runs 30] [--out benchmarks/results/issue46]

Run after ``benchmarks/tune_failshapes.py`` chose the options on tuning material at seed 0
(nothing here chooses anything). Material: ``failshape.fail_cells(held_out=True)`` at
``--seed`` (another seed than the tuning's, and the held-out part's own random streams):
long runs (100-1,000 evals, N = 300, 700, 2,000) of the four families and short collapse
and dead runs (20-60 evals). Rules: the default and the default of issue 21
(``RULE21_DEFAULT_SPEC``), each with the noise stated (``eval_n=N``) and not stated; and,
for the record (shown, not chosen on), the default at every value of the dip knob
``last`` in the tuning's sweep, noise stated.

Writes ``judge.json`` and ``judge.md``, and the plots ``knob.png`` (harm on dips and on
still-rising runs against the compute saved on collapses and dead runs, per value of
``last``: tuning figures from ``tune.json`` beside these held-out ones) and
``examples.png`` (held-out runs of each family and where each default stopped), copied to
``--figures``. Issue 21's table for the new default is ``judge_long_default.py
--candidate`` (``judge21.json`` in the same folder).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from evalstop.detbench.failshape import fail_cells
from evalstop.detbench.failshape_score import cell_outcome, pool
from evalstop.detectors import DEFAULT_SPEC, RULE21_DEFAULT_SPEC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_long_default import run_panel, with_option

LASTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
TARGETS = {
    "still rising (long): stopped with a smoothed loss > 5% of gain": ("<=", 0.01),
    "recovering dips (long): stopped with a smoothed loss > 5% of gain": ("<=", 0.10),
    "collapses (long): median delay after the fall's start, evals": ("<=", 2.0),
    "collapses (short): median delay after the fall's start, evals": ("<=", 2.0),
    "dead runs (long): stopped": (">=", 0.9),
    "dead runs (short): stopped": (">=", 0.9),
}


# The tuning's pick, judged first: on issue 21's held-out long runs its wander gate caught
# 0.007 fewer hacking runs than issue 21's default, so the default turned the gate off
# (a change made after seeing held-out figures; docs/results-failshapes.md says so).
FIRST_PICK = ("block-cusum:h=2.5,k=1.5,clip=3.0,smooth=15,min_evals=4,trim=3,smooth_min=3,"
              "blocks=16,wblocks=4,rel=0.05,hg=0.0,hn=20,lags=4,gmin=5.0,wander=2.0,last=0.0,"
              "fast=3.5,frel=0.35,dead=0.2,idle=0")


def rules(candidate: str | None = None, label: str = "candidate") -> list[tuple[str, str, str]]:
    if candidate is not None:  # the default beside one spec chosen on tuning material
        return [(name, spec, mode) for name, spec in (("default", DEFAULT_SPEC),
                                                      (label, candidate))
                for mode in ("stated", "own")]
    out = [(name, spec, mode) for name, spec in (("default", DEFAULT_SPEC),
                                                 ("issue-21 default", RULE21_DEFAULT_SPEC),
                                                 ("first pick (wander=2)", FIRST_PICK))
           for mode in ("stated", "own")]
    return out + [(f"default, last={v:g} (shown)", with_option(DEFAULT_SPEC, "last", f"{v:g}"),
                   "stated")
                  for v in LASTS]


def candidate_args(ap, instead: str, name: str, name_help: str) -> None:
    """The judges' ``--candidate SPEC --candidate-label L --name NAME``."""
    ap.add_argument("--candidate", default=None,
                    help=f"a spec chosen on tuning material, judged beside the default "
                         f"instead of {instead}")
    ap.add_argument("--candidate-label", default="candidate")
    ap.add_argument("--name", default=name, help=name_help)


def targets_met(parts: dict, rule: str, mode: str) -> dict:
    row = next(r for r in parts if r["rule"] == rule and r["noise"] == mode)
    lg, sh = row["long"], row["short"]
    vals = dict(zip(TARGETS, (lg["rising"]["tenant_harmful"], lg["dip"]["tenant_harmful"],
                              lg["collapse"]["delay_evals_median"],
                              sh["collapse"]["delay_evals_median"],
                              lg["dead"]["stopped"], sh["dead"]["stopped"])))
    return {k: {"value": v, "target": TARGETS[k][1], "op": TARGETS[k][0],
                "met": v is not None and ((v <= TARGETS[k][1]) if TARGETS[k][0] == "<="
                                          else (v >= TARGETS[k][1]))}
            for k, v in vals.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--out", default="benchmarks/results/issue46")
    ap.add_argument("--figures", default="docs/figures/issue46",
                    help="where the pages' copies of the plots go ('' for none)")
    candidate_args(ap, "the other rules (writes NAME.json and NAME.md, no plots)",
                   "judge_candidate", "the candidate's output files (with --candidate)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    mats = {"long": fail_cells(args.seed, args.runs, held_out=True),
            "short": fail_cells(args.seed, args.runs, held_out=True, short=True)}
    assert all("held-out" in c.part for cells in mats.values() for c in cells)
    rows, outcomes = [], {}
    for name, spec, mode in rules(args.candidate, args.candidate_label):
        row = {"rule": name, "spec": spec, "noise": mode}
        for part, cells in mats.items():
            outs = [cell_outcome(spec, c, mode) for c in cells]
            outcomes[(name, mode, part)] = outs
            row[part] = pool(cells, outs)
        rows.append(row)
        print(f"{time.perf_counter() - t0:6.0f}s {name} ({mode})", flush=True)
    result = {"seed": args.seed, "runs_per_cell": args.runs, "default": DEFAULT_SPEC,
              "issue21_default": RULE21_DEFAULT_SPEC, "rows": rows,
              "targets": {m: targets_met(rows, "default", m) for m in ("stated", "own")},
              "wall_s": round(time.perf_counter() - t0, 1)}
    if args.candidate is not None:
        result.update(candidate=args.candidate, candidate_label=args.candidate_label,
                      targets_candidate={m: targets_met(rows, args.candidate_label, m)
                                         for m in ("stated", "own")})
        (out / f"{args.name}.json").write_text(json.dumps(result, indent=1))
        (out / f"{args.name}.md").write_text(markdown(result))
        print(markdown(result))
        return
    result["targets_issue21_default"] = {m: targets_met(rows, "issue-21 default", m)
                                         for m in ("stated", "own")}
    (out / "judge.json").write_text(json.dumps(result, indent=1))
    (out / "judge.md").write_text(markdown(result))
    plots(result, mats, outcomes, out)
    if args.figures:
        figs = Path(args.figures)
        figs.mkdir(parents=True, exist_ok=True)
        for name in ("knob.png", "examples.png"):
            shutil.copyfile(out / name, figs / name)
    print(markdown(result))


def _f(v, nd=3):
    return "-" if v is None else f"{v:.{nd}f}"


def markdown(result: dict) -> str:
    other, label = (("targets_candidate", result["candidate_label"]) if "candidate" in result
                    else ("targets_issue21_default", "issue 21's"))
    beside = (f"`{result['candidate']}`" if "candidate" in result
              else f"issue 21's: `{result['issue21_default']}`")
    lines = [f"Default: `{result['default']}`; {beside} "
             f"(held-out, seed {result['seed']}, {result['runs_per_cell']} runs per cell).",
             "", "### Targets", "",
             f"| target | default, stated | default, own | {label}, stated | {label}, own |",
             "| --- | --- | --- | --- | --- |"]
    lines += target_rows(result, ("targets", other))
    lines += ["", "### Per rule", "",
              ("| rule | noise | rising: harmful (in 20 evals) | dips: harmful (in 20 evals) "
               "| collapses caught (long/short) "
               "| delay, evals (long/short) | dead stopped (long/short) | 'no gain left' (long) "
               "| kept its best | saved (collapse/dead, long) |"),
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [rule_row(r, dead_reason=True) for r in result["rows"]]
    return "\n".join(lines + [""])


def target_rows(result: dict, keys: tuple[str, str]) -> list[str]:
    """One table line per issue-46 target: value and verdict per rule (``keys``: the
    result's two target dicts) and noise mode."""
    lines = []
    for k, (op, v) in TARGETS.items():
        cells = [f"{_f(result[key][m][k]['value'])} "
                 f"{'met' if result[key][m][k]['met'] else 'MISSED'}"
                 for key in keys for m in ("stated", "own")]
        lines.append(f"| {k} ({op} {v}) | " + " | ".join(cells) + " |")
    return lines


def rule_row(r: dict, dead_reason: bool) -> str:
    """One rule's figures as a table line; ``dead_reason``: with the dead runs' "no gain
    left" and kept-best shares."""
    lg, sh = r["long"], r["short"]
    dead = (f"| {_f(lg['dead']['no_gain_left'])} | {_f(lg['dead']['kept_best'])} "
            if dead_reason else "")
    return (f"| {r['rule']} | {r['noise']} | {_f(lg['rising']['tenant_harmful'])} "
            f"({_f(lg['rising']['tenant_harmful_early'])}) "
            f"| {_f(lg['dip']['tenant_harmful'])} ({_f(lg['dip']['tenant_harmful_early'])}) "
            f"| {_f(lg['collapse']['stopped'])}/{_f(sh['collapse']['stopped'])} "
            f"| {_f(lg['collapse']['delay_evals_median'], 1)}/"
            f"{_f(sh['collapse']['delay_evals_median'], 1)} "
            f"| {_f(lg['dead']['stopped'])}/{_f(sh['dead']['stopped'])} "
            f"{dead}| {_f(lg['collapse']['saved'])}/{_f(lg['dead']['saved'])} |")


def plots(result, mats, outcomes, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    tune_file = out / "tune.json"
    series = [("held-out (the default)",
               [r for r in result["rows"] if r["rule"].endswith("(shown)")])]
    if tune_file.exists():
        tune = json.loads(tune_file.read_text())
        series.insert(0, ("tuning (the first pick, wander=2)",
                          [{"rule": f"last={r['last']:g}", **r["stated"]}
                                     for r in tune["knob"]]))
    for ax, fam, title in ((axes[0], "dip", "recovering dips"),
                           (axes[1], "rising", "still rising under a wander")):
        for label, rows in series:
            saved = [(r["long"]["collapse"]["saved"] + r["long"]["dead"]["saved"]) / 2
                     for r in rows]
            harm = [r["long"][fam]["tenant_harmful"] for r in rows]
            ax.plot(saved, harm, "o-", label=label)
            for x, y, v in zip(saved, harm, LASTS):
                ax.annotate(f"{v:g}", (x, y), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
        ax.set_xlabel("compute saved on collapses and dead runs (share of their evals)",
                      fontsize=8)
        ax.set_ylabel("stopped with a smoothed loss > 5% of gain", fontsize=8)
        ax.set_title(f"{title}: per value of last (noise stated)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].axhline(0.10, color="k", lw=0.8, ls="--")
    axes[1].axhline(0.01, color="k", lw=0.8, ls="--")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "knob.png", dpi=90)
    plt.close(fig)

    fams = ("rising", "dip", "collapse", "dead")
    fig, axes = plt.subplots(1, len(fams), figsize=(4 * len(fams), 3.4))
    cells = mats["long"]
    for ax, fam in zip(axes, fams):
        ci = next(i for i, c in enumerate(cells)
                  if c.family == fam and c.evals == 400 and c.items == 700)
        c = cells[ci]
        # the first run the two defaults treat differently, else the first run
        a = outcomes[("default", "stated", "long")][ci]
        b = outcomes[("issue-21 default", "stated", "long")][ci]
        differ = np.flatnonzero((a["stopped"] != b["stopped"]) | (a["stop_idx"] != b["stop_idx"]))
        i = int(differ[0]) if differ.size else 0
        run_panel(ax, c, i, ((a, "C0", "default"), (b, "C3", "issue-21 default")),
                  f"{fam}, 400 evals, N=700 (run {i})")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "examples.png", dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
