"""Write everything a reproduce run produces into one folder: results (JSON, CSV), figures
(PNG), ``report.md`` and a self-contained ``report.html`` with the same content."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from evalstop import __version__
from evalstop.experiments.aggregate import Summary, summarize
from evalstop.experiments.paper import CLAIMS, SOURCE, figures_for
from evalstop.experiments.runner import ExperimentRun
from evalstop.report.blocks import Block, Bullets, Heading, Para, Table, contents
from evalstop.report.claims import compare, evaluate
from evalstop.report.context import SectionContext
from evalstop.report.files import write_experiment, write_json, write_text
from evalstop.report.fmt import pct, signed_pct
from evalstop.report.html import to_html
from evalstop.report.markdown import to_markdown
from evalstop.report.sections import claim_map, detbench, section_for
from evalstop.report.verdict import first_screen

TITLE = "EvalStop: what a platform saves, and the paper's studies reproduced in simulation"
# The sections that draw the most (claim-map heatmaps, the real corpus, the frontier, the
# platform's fit against the real runs): given
# an executor, these are drawn in another process while this one draws the rest.
HEAVY_SECTIONS = ("claim_map", "real_corpus", "frontier", "platform")
METRIC_NAMES = {"precision": "precision", "recall": "recall", "fpr": "FPR",
                "jct_mean_s": "mean JCT change", "waste_gpu_h": "wasted GPU-h change"}


@dataclass
class RunInfo:
    wall_s: float  # wall time of running the experiments (the report comes after)
    workers: int
    quick: bool
    command: str = ""
    detectors_s: float | None = None  # wall time of the detector benchmark, if it ran


@dataclass
class ReportFiles:
    markdown: Path
    html: Path
    results_json: Path
    others: list[Path] = field(default_factory=list)


def _intro(runs: dict[str, ExperimentRun], info: RunInfo) -> list[Block]:
    n_sims = sum(r.n_sims for r in runs.values())
    sim_s = sum(r.sim_s for r in runs.values())
    st = next(iter(runs.values())).settings
    quick = (" This is a **--quick** run (few seeds, small workloads): a smoke test, not "
             "evidence; run without --quick for the real study.") if info.quick else ""
    return [
        Heading(1, TITLE),
        Para(f"The studies of \"EvalStop: Using World Feedback to Detect and Correct Reward "
             f"Overoptimization in Multi-Tenant RLHF Platforms\" ({SOURCE}), run on the "
             f"evalstop simulator in the paper's setting (preset `paper`), after what a "
             f"platform would save on a workload fitted to measured runs (preset `fitted`, "
             f"the `platform` study). The paper's figures stand "
             f"beside ours; we report what we measured and did not tune anything to match."
             + quick),
        Para(f"**Run.** evalstop {__version__}; experiments: "
             f"{', '.join(f'`{n}`' for n in runs)}; {st.n_seeds} seeds each (base seed "
             f"{st.base_seed}), {st.n_jobs} jobs per workload; {n_sims} simulations "
             f"({sim_s:.1f} CPU-s simulating); {info.workers} worker process(es) on "
             f"{os.cpu_count()} CPU(s); {info.wall_s:.1f} s wall time to run them."
             + (f" Command: `{info.command}`." if info.command else "")
             + (f" Every study ran on the workload knob preset `{st.preset}` (see the "
                "claim map section)." if st.preset else "")),
        Para("**How to read.** Values are means across seeds with a 95% Student-t interval in "
             "brackets. A change is the relative change of the means against the method's "
             "baseline on the same seeds (same workloads), with a 95% paired bootstrap "
             "interval (seeds resampled), and p the two-sided paired Wilcoxon signed-rank test. n/a marks an "
             "undefined value (a ratio with a zero denominator, e.g. precision with no stops); "
             "a mean over fewer seeds than the run had says so, the other seeds being "
             "undefined. Intervals of ratios are clipped to [0, 100%]."),
    ]


def _main_rows(summaries: dict[str, Summary]) -> list[tuple[str, ...]]:
    """The main table's published figures, one row each, against ours."""
    if "main" not in summaries:
        return []
    rows = []
    for f in figures_for("main"):
        ours = summaries["main"].value("paper", f.method, f.metric, f.field)
        show = pct if f.field == "mean" else signed_pct
        what = METRIC_NAMES.get(f.metric, f.metric)
        rows.append(("`main`", f"{f.method}: {what} {show(f.value)}", show(ours),
                     compare(f.metric, f.field, ours, f.value)))
    return rows


def _at_a_glance(summaries: dict[str, Summary]) -> list[Block]:
    rows = _main_rows(summaries)
    for c in CLAIMS:
        if c.experiment in summaries:
            rows.append((f"`{c.experiment}`", c.text, *evaluate(c, summaries[c.experiment].rows)))
    if not rows:
        return []
    return [Heading(2, "The paper's claims at a glance"),
            Table(("Study", f"Claim ({SOURCE})", "Ours", "Verdict"), tuple(rows)),
            Para("A single figure is \"as claimed\" within 2 points of the paper's (a rate, "
                 "or a percent change); otherwise \"better\" or \"worse than claimed\" says "
                 "which way ours lies for the platform: more precision and recall, fewer false "
                 "stops, a larger cut in JCT and wasted GPU-hours. A claimed range holds when "
                 "every value lies in it. The main table's figures, with intervals, are in the "
                 "`main` section.")]


def _section(name: str, ctx: SectionContext) -> list[Block]:
    return section_for(name)(ctx)


def write_report(runs: dict[str, ExperimentRun], out_dir: str | Path, info: RunInfo, *,
                 detectors: dict | Callable[[], tuple[dict, float]] | None = None,
                 executor: Executor | None = None,
                 step: Callable[[str], None] | None = None) -> ReportFiles:
    """``detectors``: the summary ``run_detector_benchmark`` returned, run into
    ``<out_dir>/detectors``; it adds the benchmark's section (None: no section). It may
    also be a zero-argument callable returning (summary, seconds): it is called only after
    the studies' tables and figures are written, so the benchmark can run in another
    process meanwhile. ``executor`` (e.g. a one-process pool): the ``HEAVY_SECTIONS`` are
    drawn there, beside the rest; the report is the same either way. ``step`` (optional)
    is called with what is being done next, for progress (``evalstop.progress.stage``)."""
    step = step or (lambda text: None)
    if not runs:
        raise ValueError("no experiments to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summaries, others, results = {}, [], {}
    for name, run in runs.items():
        step(f"summarising {name}")
        rows = summarize(run.experiment, run.rows)
        summaries[name] = Summary(rows)
        if run.rows:  # a study with no simulations (real_corpus) has no rows to write
            others += write_experiment(out, name, run.rows, rows)
        results[name] = {"title": run.experiment.title, "n_gpus": run.n_gpus,
                         "n_sims": run.n_sims, "sim_s": run.sim_s, "rows": run.rows,
                         "summary": rows}
    preset = next(iter(runs.values())).settings.preset
    contexts = {name: SectionContext(run, summaries[name], out, summaries)
                for name, run in runs.items()}
    elsewhere = {name: executor.submit(_section, name, contexts[name])
                 for name in HEAVY_SECTIONS if name in runs and executor is not None}
    drawn = {}
    here = [name for name in contexts if name not in elsewhere]
    for i, name in enumerate(here, 1):
        step(f"drawing {name} ({i}/{len(here)})"
             + (f"; {', '.join(elsewhere)} in another process" if elsewhere else ""))
        drawn[name] = _section(name, contexts[name])
    for name, future in elsewhere.items():
        step(f"drawing {name} (in another process)")
        elsewhere[name] = future.result()
    studies = [block for name in runs
               for block in (elsewhere[name] if name in elsewhere else drawn[name])]
    if callable(detectors):
        step("waiting for the detector benchmark")
        detectors, seconds = detectors()
        info = replace(info, detectors_s=seconds)
    st = next(iter(runs.values())).settings
    results_json = write_json(out / "results.json", {
        "evalstop_version": __version__, "paper": SOURCE, "settings": asdict(st),
        "run": asdict(info), "experiments": results})

    body = claim_map.first_page(summaries, preset) + _at_a_glance(summaries) + studies
    if detectors is not None:
        step("drawing the detector benchmark's section")
        body += detbench.render(detectors, out, quick=info.quick, seconds=info.detectors_s)
    bench_files = ((f"`{detbench.DIR}/`: the detector benchmark's detectors.json, .csv, "
                    ".md and precision-recall plots"),) if detectors is not None else ()
    body += [Heading(2, "Files"), Bullets((
        "`results.json`: settings, per-seed rows and summaries of every experiment",
        "`<experiment>_runs.csv`: one row per (point, method, seed) with every metric",
        ("`<experiment>_summary.csv`: one row per (point, method, metric): mean, 95% CI, "
         "change vs baseline, Wilcoxon p"),
        "`figures/*.png`: the plots; `report.html` embeds them", *bench_files))]
    # The first screen answers first; the contents list every section after it.
    intro = _intro(runs, info)
    blocks = [intro[0], *first_screen(summaries, preset)]
    blocks += [contents(blocks + intro[1:] + body), *intro[1:], *body]
    step("writing report.md and report.html")
    md = write_text(out / "report.md", to_markdown(blocks))
    html = write_text(out / "report.html", to_html(blocks, out, TITLE))
    others += sorted((out / "figures").glob("*.png")) if (out / "figures").is_dir() else []
    return ReportFiles(md, html, results_json, others)
