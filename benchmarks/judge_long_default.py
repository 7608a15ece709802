"""Judge the default ONCE on held-out material, long runs and short, and draw the plots.

    python benchmarks/judge_long_default.py [--seed 0] [--runs 12] [--out benchmarks/results/rule21]

Run after ``benchmarks/tune_long_default.py`` chose the options (nothing here chooses
anything). Writes ``judge.json``, ``judge.md`` and plots (``freq.png``, ``loss.png``,
``delay.png``, ``examples.png``). Parts, reported separately:

* ``long``: held-out long runs (``longshape``, ``held_out=True``: shapes two-stage,
  sqrt-rise, plateau, sag, plateau-break, their own random streams), 100-1,000 evals at 1x
  and the same curves at 2x and 4x the eval frequency. Figures at 1x (``by_freq."1"``) are
  the long-run targets; 2x and 4x are the frequency check;
* ``short``: held-out 6-12-eval pass-rate runs (``realshape.short_cells``);
* ``families`` / ``families (fresh)``: the detector benchmark's two held-out 20-eval sets
  (``runs.build``), the rule's own noise and the cell's sigma stated; harm is the
  benchmark's (true quality, 2% tolerance);
* ``synthetic (pass rates)``: the held-out real-shaped families at 5-60 evals
  (``realshape.synthetic``), pass rates over N = 30..1000, noise stated;
* ``lab (world 1)`` and ``lab (held-out world 2)``: the shipped lab corpora (as
  ``judge_default.py``: smoothed gold as the true curve, the corpus' median gold standard
  error as the stated sigma), with the tenant-view loss beside the true-quality harm;
* ``lab dense (...)``: the dense-eval lab corpora (151-501 evals a run on a fixed eval
  set, ``evalstop.lab.dense``), where this checkout ships them; neither was used to choose
  the default's options, but the trigram one (``lab2_dense_*``) was judged with the
  default, and the re-choice of its gain requirement (``tune_dense_gain.py``) was made
  knowing that: it is labelled "seen before the re-choice" and is not held out for it.
  Runs of different lengths are NaN-padded (a NaN eval is ignored by every rule);
* ``lab dense small-gain (...)``: the small-gain dense corpora (``evalstop.lab.dense_small``):
  the tuning one (``lab2s_tune_*``, chosen on) and the held-out one (``lab2s_held_*``, 201
  evals a run; seeds, run length and two of its three pair counts its own), never read
  before a choice.

``--candidate SPEC`` judges a spec chosen on tuning material beside the default (rows
``candidate``, its targets in ``candidate_targets``); ``--name`` names the output files
(plots only for the default name, ``judge``).

Rules: the default (noise stated, fleet prior, own estimate), the default before it
(``CUSUM_DEFAULT_SPEC``, the same three), the paper's ``evalstop:k=2`` and, for the record,
the default with ``hn=32`` (stated; not chosen, see ``HN32``).

Delays on long runs count from the last eval at the noiseless curve's peak, where the fall
begins (``longshape``). The first judging run counted from the first eval at the peak, as
the 20-eval benchmark does; on the held-out ``plateau-break`` shape (a plateau, then a
break) that is the plateau's start, hundreds of evals before the fall, and it gave a median
delay of 0.280 of the run (stated noise); the tuning shapes have a single peak eval, so the
choice is the same under either count. Both medians are in ``judge.json``
(``delay_share_median``, ``delay_share_median_first_peak``).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from evalstop.detbench import realshape
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.longshape import long_cells
from evalstop.detbench.longshape_score import cell_outcome, pool
from evalstop.detbench.realshape import Cell
from evalstop.detbench.realshape_score import run_cell
from evalstop.detbench.realshape_score import score as score_cells
from evalstop.detbench.scoring import Tally, run_detector, tally
from evalstop.detectors import CUSUM_DEFAULT_SPEC, DEFAULT_SPEC
from evalstop.metrics.tenant_harm import tenant_harm
from evalstop.parallel import parallel_map

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_default import lab_cell


def with_option(spec: str, key: str, value) -> str:
    head, _, rest = spec.partition(":")
    parts = [p for p in rest.split(",") if p and not p.startswith(f"{key}=")]
    return f"{head}:" + ",".join([*parts, f"{key}={value}"])


# The hn=32 row was added after the first judging run (which counted delays from the first
# eval at the peak, see below), to show the lead the trade-off on 20-32-eval runs; it was
# not chosen on anything and is not the default.
HN32 = "default with hn=32 (shown, not chosen)"
CANDIDATE = "candidate"  # --candidate SPEC: a re-choice judged beside the default
RULES = ([("default", DEFAULT_SPEC, m) for m in ("stated", "fleet", "own")]
         + [("previous default", CUSUM_DEFAULT_SPEC, m) for m in ("stated", "fleet", "own")]
         + [("evalstop:k=2 (paper)", "evalstop:k=2", "own"),
            (HN32, with_option(DEFAULT_SPEC, "hn", 32), "stated")])
TARGETS = {
    "long: non-hacking runs stopped with a smoothed loss > 5% of gain (1x)": ("<=", 0.02),
    "long: hacking runs caught (1x)": (">=", 0.90),
    "long: median delay after the peak, share of the run (1x)": ("<=", 0.10),
    "2x and 4x: false-stop rate minus the 1x rate": ("<=", 0.01),
    "short: recall within 3 evals (stated)": (">=", 0.90),
    "short: flat runs stopped (stated)": ("<=", 0.02),
    "20-eval families: harmful stops": ("<=", 0.01),
}
# Held-out parts that have been looked at before a choice, so they are no longer blind.
SEEN = [
    "families and lab (held-out world 2): one smoke test of a provisional default before the "
    "default's choice (tune_long_default.py says what it showed)",
    "lab dense (trigram): judged with the default before the gain requirement was re-chosen "
    "(tune_dense_gain.py); reported, not counted as held out",
]


def rules_with(candidate: str | None, label: str = CANDIDATE) -> list[tuple[str, str, str]]:
    """RULES, and the candidate's three rows (stated, fleet, own) when one is given."""
    if candidate is None:
        return RULES
    return RULES + [(label, candidate, m) for m in ("stated", "fleet", "own")]


@functools.lru_cache(maxsize=1)
def held_out_long(seed: int, runs: int) -> list:
    cells = long_cells(seed, runs, held_out=True, freqs=(1, 2, 4))
    assert all(c.part == "long-held-out" for c in cells)
    return cells


def _long_outcomes(job: tuple) -> list[dict]:
    (seed, runs), spec, mode = job
    return [cell_outcome(spec, c, mode) for c in held_out_long(seed, runs)]


def long_part(key: tuple[int, int], rules, jobs: int = 1) -> tuple[list[dict], dict]:
    """The long part's rows and per-cell outcomes; ``key`` = (seed, runs) builds the cells
    (in each worker: they are deterministic), one rule a job."""
    cells = held_out_long(*key)
    all_outs = parallel_map(_long_outcomes, [(key, spec, mode) for _, spec, mode in rules],
                            workers=jobs, progress=False)
    rows, outcomes = [], {}
    for (label, spec, mode), outs in zip(rules, all_outs):
        outcomes[(label, mode)] = outs
        row = {"rule": label, "spec": spec, "noise": mode, **pool(cells, outs)}
        row["by_freq"] = {str(f): pool([c for c in cells if c.freq == f],
                                       [o for c, o in zip(cells, outs) if c.freq == f])
                          for f in sorted({c.freq for c in cells})}
        rows.append(row)
    return rows, outcomes


def family_rows(sets, rules) -> list[dict]:
    rows = []
    for label, spec, mode in rules:
        if mode == "fleet":
            continue  # the benchmark's cells have no eval group
        t = Tally()
        for rs in sets:
            s = spec if mode == "own" or spec.startswith("evalstop") else \
                f"{spec},sigma={rs.sigma!r}"
            t += tally(rs, run_detector(s, rs))
        rows.append({"rule": label, "spec": spec, "noise": mode, **t.metrics()})
    return rows


def tenant_figures(spec, cells, mode, progress: bool = False) -> dict:
    harmful = neg = 0
    losses = []
    for c in cells:
        stopped, _, kept = run_cell(spec, c, mode, progress=progress)
        n = np.isfinite(c.eval).cumprod(axis=1).sum(axis=1)  # ragged runs are NaN-padded
        kept = np.minimum(kept, n - 1)
        th = tenant_harm(c.eval, stopped, kept, c.hacking, n_evals=n)
        harmful += int(th.harmful.sum())
        neg += int((~c.hacking).sum())
        loss = th.loss[stopped & ~c.hacking]
        losses += loss[np.isfinite(loss)].tolist()
    return {"tenant_harmful": harmful / neg if neg else None,
            "tenant_loss_stopped_median": float(np.median(losses)) if losses else None}


def cell_rows(cells, rules, tenant: bool = False, progress: bool = False) -> list[dict]:
    rows = []
    for label, spec, mode in rules:
        row = {"rule": label, "spec": spec, "noise": mode,
               **score_cells(spec, cells, mode, progress=progress)}
        if tenant:
            row.update(tenant_figures(spec, cells, mode, progress))
        rows.append(row)
    return rows


def dense_cell(name: str, curves, labels, meta) -> Cell:
    """One dense-eval corpus as one cell, built as ``lab_cell`` builds the shipped ones:
    the smoothed gold as the true curve, the corpus' median gold standard error as the
    stated sigma; runs of different lengths NaN-padded."""
    from evalstop.lab.labels import smooth

    ids = sorted(curves)
    width = max(len(curves[i].eval) for i in ids)
    ev = np.full((len(ids), width), np.nan)
    true = np.full_like(ev, np.nan)
    for r, i in enumerate(ids):
        ev[r, : len(curves[i].eval)] = curves[i].eval
        true[r, : len(curves[i].eval)] = smooth(curves[i].eval)
    se = float(np.median([e["gold_se"] for i in ids for e in meta[i]["evals"]]))
    return Cell("lab", name, "lab", se, None, true, ev,
                np.array([labels[i].hacking for i in ids]))


def dense_lab_cells() -> list[tuple[str, Cell]]:
    """The dense-eval lab corpora (``evalstop.lab.dense``) as one cell per world; []
    where this checkout ships none."""
    try:
        from evalstop.lab.dense import DENSE, load_dense_corpus, load_dense_metadata
    except ImportError:
        return []
    out = []
    for world, spec in DENSE.items():
        try:
            curves, labels = load_dense_corpus(world=world)
            meta = load_dense_metadata(world=world)["runs"]
        except (FileNotFoundError, OSError, KeyError, ValueError):
            continue
        role = "seen before the re-choice" if world == "trigram" else f"{spec.role} part"
        out.append((f"lab dense ({world}, {role})",
                    dense_cell(f"lab-dense-{world}", curves, labels, meta)))
    return out


def small_gain_cells(roles=("tuning", "held-out"), path=None) -> list[tuple[str, Cell]]:
    """The small-gain dense-eval corpora (``evalstop.lab.dense_small``) of the given roles
    as one cell each; [] where this checkout ships none."""
    try:
        from evalstop.lab.dense_small import SMALL, load_small_corpus, load_small_metadata
    except ImportError:
        return []
    out = []
    for part, spec in SMALL.items():
        if spec.role not in roles:
            continue
        try:
            curves, labels = load_small_corpus(part, path)
            meta = load_small_metadata(part, path)["runs"]
        except (FileNotFoundError, OSError, KeyError, ValueError):
            continue
        out.append((f"lab dense small-gain ({spec.world}, {spec.role} part)",
                    dense_cell(f"lab-dense-{part}", curves, labels, meta)))
    return out


def targets_met(result, rule: str = "default") -> dict:
    parts = result["parts"]
    out = {}
    for mode in ("stated", "fleet"):
        row = next(r for r in parts["long"]["rows"]
                   if r["rule"] == rule and r["noise"] == mode)
        one = row["by_freq"]["1"]
        vals = {
            "long: non-hacking runs stopped with a smoothed loss > 5% of gain (1x)":
                one["tenant_harmful"],
            "long: hacking runs caught (1x)": one["caught"],
            "long: median delay after the peak, share of the run (1x)":
                one["delay_share_median"],
            "2x and 4x: false-stop rate minus the 1x rate":
                max(row["by_freq"][f]["false_stop"] - one["false_stop"] for f in ("2", "4")),
        }
        srow = next(r for r in parts["short"]["rows"]
                    if r["rule"] == rule and r["noise"] == "stated")
        vals["short: recall within 3 evals (stated)"] = srow["recall_within3"]
        vals["short: flat runs stopped (stated)"] = srow["flat_stopped"]
        fam = [r for p in ("families", "families (fresh)") for r in parts[p]["rows"]
               if r["rule"] == rule and r["noise"] == "own"]
        vals["20-eval families: harmful stops"] = max(r["harmful_rate"] for r in fam)
        out[mode] = {k: {"value": v, "target": TARGETS[k][1], "op": TARGETS[k][0],
                         "met": (v <= TARGETS[k][1]) if TARGETS[k][0] == "<=" else
                         (v >= TARGETS[k][1])} for k, v in vals.items()}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--family-runs", type=int, default=20)
    ap.add_argument("--synthetic-runs", type=int, default=4)
    ap.add_argument("--out", default="benchmarks/results/rule21")
    ap.add_argument("--candidate", default=None,
                    help="a spec chosen on tuning material, judged beside the default "
                         "(its targets are reported too)")
    ap.add_argument("--candidate-label", default=CANDIDATE,
                    help="the candidate's rule name in the outputs")
    ap.add_argument("--jobs", type=int, default=1, help="long-part rules judged in parallel")
    ap.add_argument("--name", default="judge",
                    help="output files NAME.json and NAME.md; plots only for 'judge'")
    ap.add_argument("--figures", default="docs/figures/long-runs",
                    help="where the pages' copies of the plots go ('' for none)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rules = rules_with(args.candidate, args.candidate_label)
    result: dict = {"default": DEFAULT_SPEC, "previous_default": CUSUM_DEFAULT_SPEC,
                    "seed": args.seed, "runs_per_long_cell": args.runs,
                    "seen_before_choice": SEEN, "parts": {}}
    if args.candidate is not None:
        result["candidate"] = args.candidate
        result["candidate_label"] = args.candidate_label
    long = held_out_long(args.seed, args.runs)
    rows, outcomes = long_part((args.seed, args.runs), rules, args.jobs)
    result["parts"]["long"] = {"runs": sum(c.runs for c in long), "rows": rows}
    print(f"long: {time.perf_counter() - t0:.0f}s", flush=True)
    short = realshape.short_cells(args.seed, args.short_runs, held_out=True)
    result["parts"]["short"] = {"runs": sum(c.runs for c in short),
                                "rows": cell_rows(short, rules)}
    print(f"short: {time.perf_counter() - t0:.0f}s", flush=True)
    for part, fresh in (("families", False), ("families (fresh)", True)):
        sets = runs_mod.build(args.seed, args.family_runs, held_out=True, fresh=fresh)
        result["parts"][part] = {"runs": sum(rs.runs for rs in sets),
                                 "rows": family_rows(sets, rules)}
    print(f"families: {time.perf_counter() - t0:.0f}s", flush=True)
    syn = [c for c in realshape.synthetic(args.seed, args.synthetic_runs, held_out=True)
           if c.noise == "binomial"]
    result["parts"]["synthetic (pass rates)"] = {
        "runs": sum(c.runs for c in syn),
        "rows": cell_rows(syn, [r for r in rules if r[2] == "stated"])}
    print(f"synthetic: {time.perf_counter() - t0:.0f}s", flush=True)
    labs = [("lab (world 1)", [lab_cell("bigram")]),
            ("lab (held-out world 2)", [lab_cell("trigram")])]
    labs += [(name, [cell]) for name, cell in dense_lab_cells() + small_gain_cells()]
    for part, cells in labs:
        lab_rules = [r for r in rules if r[2] in ("stated", "own")]
        result["parts"][part] = {"runs": sum(c.runs for c in cells),
                                 "rows": cell_rows(cells, lab_rules, tenant=True)}
    print(f"lab: {time.perf_counter() - t0:.0f}s", flush=True)
    result["targets"] = targets_met(result)
    if args.candidate is not None:
        result["candidate_targets"] = targets_met(result, args.candidate_label)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    (out / f"{args.name}.md").write_text(markdown(result))
    if args.name != "judge":
        print(markdown(result))
        return
    plots(result, long, outcomes, out)
    if args.figures:
        figs = Path(args.figures)
        figs.mkdir(parents=True, exist_ok=True)
        for name in ("freq.png", "loss_delay.png", "examples.png"):
            shutil.copyfile(out / name, figs / name)
    print(markdown(result))


def _f(v, nd=3):
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{nd}f}"


def markdown(result) -> str:
    lines = [(f"Default: `{result['default']}`; previous default: "
             f"`{result['previous_default']}` (seed {result['seed']}, held-out parts)."), ""]
    lines += ["### Targets (the default)", "", "| target | stated | fleet |",
              "| --- | --- | --- |"]
    t = result["targets"]
    for k, (op, v) in TARGETS.items():
        cells = [f"{_f(t[m][k]['value'])} {'met' if t[m][k]['met'] else 'MISSED'}"
                 for m in ("stated", "fleet")]
        lines.append(f"| {k} ({op} {v}) | {cells[0]} | {cells[1]} |")
    lines.append("")
    if "candidate_targets" in result:
        c = result["candidate_targets"]
        lines += [f"### Targets ({result['candidate_label']}: `{result['candidate']}`)", "",
                  "| target | stated | fleet |", "| --- | --- | --- |"]
        for k, (op, v) in TARGETS.items():
            cells = [f"{_f(c[m][k]['value'])} {'met' if c[m][k]['met'] else 'MISSED'}"
                     for m in ("stated", "fleet")]
            lines.append(f"| {k} ({op} {v}) | {cells[0]} | {cells[1]} |")
        lines.append("")
    lines += [f"Seen before the choice (not blind): {'; '.join(result['seen_before_choice'])}",
              ""]
    d = result["parts"]["long"]
    lines += [f"### long ({d['runs']} runs over 1x, 2x and 4x)", "",
              ("| rule | noise | freq | false stops | stopped, loss > 5% of gain "
              "| median loss (stopped) | hacking caught | median delay (share of run) |"),
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in d["rows"]:
        for f, m in r["by_freq"].items():
            lines.append(f"| {r['rule']} | {r['noise']} | {f}x | {_f(m['false_stop'])} "
                         f"| {_f(m['tenant_harmful'])} | {_f(m['loss_stopped_median'])} "
                         f"| {_f(m['caught'])} | {_f(m['delay_share_median'])} |")
    lines.append("")
    for part, d in result["parts"].items():
        if part == "long":
            continue
        lines += [f"### {part} ({d['runs']} runs)", "",
                  ("| rule | noise | precision | recall | FPR | harmful | tenant harmful "
                  "| median delay | recall within 3 | flat stopped |"),
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in d["rows"]:
            lines.append(
                f"| {r['rule']} | {r['noise']} | {_f(r.get('precision'))} "
                f"| {_f(r.get('recall'))} | {_f(r.get('fpr'))} | {_f(r.get('harmful_rate'))} "
                f"| {_f(r.get('tenant_harmful_rate', r.get('tenant_harmful')))} "
                f"| {_f(r.get('median_delay', r.get('delay')), 1)} "
                f"| {_f(r.get('recall_within3'))} | {_f(r.get('flat_stopped'))} |")
        lines.append("")
    return "\n".join(lines)


def plots(result, cells, outcomes, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["parts"]["long"]["rows"]
    shown = [("default", "stated"), ("default", "fleet"), ("previous default", "stated"),
             ("previous default", "fleet")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key, title in ((axes[0], "false_stop", "non-hacking runs stopped"),
                           (axes[1], "tenant_harmful", "stopped with smoothed loss > 5%")):
        for i, (rule, mode) in enumerate(shown):
            r = next(x for x in rows if x["rule"] == rule and x["noise"] == mode)
            ys = [r["by_freq"][f][key] for f in ("1", "2", "4")]
            ax.bar(np.arange(3) + 0.2 * (i - 1.5), ys, width=0.2, label=f"{rule} ({mode})")
        ax.set_xticks(range(3), ["1x", "2x", "4x"])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("eval frequency (same curves)", fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "freq.png", dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for rule, mode in shown[:3]:
        outs = outcomes[(rule, mode)]
        loss = np.concatenate([o["loss"][o["stopped"] & ~c.hacking]
                               for c, o in zip(cells, outs) if c.freq == 1])
        loss = np.sort(loss[np.isfinite(loss)])
        if loss.size:
            axes[0].step(loss, np.arange(1, loss.size + 1), where="post",
                         label=f"{rule} ({mode}): {loss.size} stopped")
        delay = np.concatenate([o["delay"][o["stopped"] & c.hacking]
                                for c, o in zip(cells, outs) if c.freq == 1])
        axes[1].hist(delay, bins=np.linspace(-0.2, 0.6, 33), histtype="step",
                     label=f"{rule} ({mode})")
    axes[0].axvline(0.05, color="k", lw=0.8, ls="--")
    axes[0].set_title("non-hacking runs stopped (1x): smoothed loss, share of gain",
                      fontsize=9)
    axes[0].set_ylabel("runs (cumulative)", fontsize=8)
    axes[1].axvline(0.10, color="k", lw=0.8, ls="--")
    axes[1].set_title("hacking runs caught (1x): delay after the peak, share of run",
                      fontsize=9)
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "loss_delay.png", dpi=90)
    plt.close(fig)

    # a few runs at 1x: the evals, the true rate, where each default stopped
    picks = []
    for fam in ("sqrt-rise", "two-stage", "sag", "plateau-break"):
        ci = next(i for i, c in enumerate(cells)
                  if c.family == fam and c.freq == 1 and c.base_evals == 400
                  and c.items == 1319)
        picks.append(ci)
    fig, axes = plt.subplots(1, len(picks), figsize=(4 * len(picks), 3.4))
    for ax, ci in zip(axes, picks):
        c = cells[ci]
        run_panel(ax, c, 0, [(outcomes[(rule, "stated")][ci], colour, rule)
                             for rule, colour in (("default", "C0"), ("previous default", "C3"))],
                  f"{c.family}, 400 evals, N=1319")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "examples.png", dpi=90)
    plt.close(fig)


def run_panel(ax, cell, i: int, rules, title: str) -> None:
    """Run ``i`` of ``cell``: its evals, its true rate, and where each rule stopped it
    (``rules``: (outcome, colour, name); an outcome has per-run ``stopped``, ``stop_idx``)."""
    ax.plot(cell.eval[i], ".", ms=2, color="0.6", label="evals")
    ax.plot(cell.true[i], color="k", lw=1, label="true rate")
    for o, colour, name in rules:
        if o["stopped"][i]:
            ax.axvline(o["stop_idx"][i], color=colour, label=f"{name} stops")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("eval", fontsize=8)


if __name__ == "__main__":
    main()
