"""The ``real_main`` study runs the paper's rule and the default on real (lab) RLHF curves,
and its report section shows both."""

from __future__ import annotations

from evalstop.detectors import DEFAULT_SPEC, canonical
from evalstop.experiments import Settings, Summary, run_experiments, select, summarize
from evalstop.report.context import SectionContext
from evalstop.report.markdown import to_markdown
from evalstop.report.sections import section_for


def test_real_main_runs_and_reports_the_default_beside_the_papers_rule(tmp_path):
    run = run_experiments(select("real_main"), Settings(n_seeds=1, n_jobs=30), workers=1,
                          progress=False)["real_main"]
    for point in run.experiment.points:
        specs = {m.label: m.detector for m in point.methods}
        assert specs["EvalStop+SRTF-Est"] == "evalstop:k=2"
        assert specs["Default+SRTF-Est"] == canonical(DEFAULT_SPEC)
    summary = Summary(summarize(run.experiment, run.rows))
    assert summary.get("lab", "Default+SRTF-Est", "jct_mean_s") is not None
    oracle = "EvalStop+SRTF-Est (oracle: true stops only)"
    fp = [r["fp"] for r in run.rows if r["method"] == oracle]
    assert fp and all(v == 0 for v in fp)  # it never stops a healthy job
    md = to_markdown(section_for("real_main")(SectionContext(run, summary, tmp_path)))
    rows = [line for line in md.splitlines() if line.startswith("| Default+SRTF-Est |")]
    # four rates, two changes, quality, harm, regret, compute saved, harm in the tenant's view
    assert len(rows) == 11
    assert any("| Harmful stops (share of non-hacking jobs) |" in r for r in rows)
    assert any("| Compute saved (share of eval intervals) |" in r for r in rows)
    tenant = [r for r in rows if "| Harmful stops, tenant view (share of non-hacking jobs) |" in r]
    assert len(tenant) == 1 and "n/a" not in tenant[0]
    assert summary.get("lab", "Default+SRTF-Est", "tenant_harmful_rate") is not None
