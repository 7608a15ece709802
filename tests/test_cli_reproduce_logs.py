"""`evalstop reproduce --logs DIR [--sacct FILE]`: what each rule would have saved and cost
on a platform's own runs, GPU-hours from a Slurm export; one-line errors on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_own_logs import N, curve, write_jsonl

from evalstop.cli.main import main

GPUS, HOURS = 4, 10.0
HEADER = "JobIDRaw|JobName|Account|State|Submit|Start|End|AllocTRES"


def _logs(tmp_path, n_runs=12):
    rng = np.random.default_rng(7)
    write_jsonl(tmp_path / "logs" / "runs.jsonl",
                {f"job{i}": curve(i % 2 == 0, rng) for i in range(n_runs)})
    return tmp_path / "logs"


def _sacct(tmp_path, names, *, gpus=GPUS):
    rows = [HEADER] + [f"{100 + i}|{name}|acme|COMPLETED|1000|2000|{2000 + int(HOURS * 3600)}|"
                       f"billing=1,cpu=8,gres/gpu={gpus}" for i, name in enumerate(names)]
    path = tmp_path / "jobs.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


def _rules(out) -> dict:
    return {r["rule"]: r for r in json.loads((out / "own_runs.json").read_text())["rules"]}


def test_own_runs_report_with_gpu_hours_from_sacct(tmp_path, capsys):
    logs = _logs(tmp_path)
    sacct = _sacct(tmp_path, [f"job{i}" for i in range(10)])  # two runs left unmatched
    out = tmp_path / "out"
    assert main(["reproduce", "--logs", str(logs), "--sacct", str(sacct),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "default: stopped" in printed.out and "evalstop:k=2: stopped" in printed.out
    assert "not ground truth" in printed.out and "reading logs" in printed.err
    data = json.loads((out / "own_runs.json").read_text())
    assert data["runs"]["read"] == 12 and data["runs"]["hacking"] == 6
    assert data["sizes"]["runs_matched"] == 10 and data["sizes"]["unsized"] == 2
    rules = _rules(out)
    assert rules["none"]["stopped"] == 0 and rules["none"]["gpu_hours_freed"] == 0
    assert rules["none"]["post_peak_freed"] == 0
    d = rules["default"]
    assert d["recall"] == 1.0 and d["tp"] == 6  # the hacking runs fall far: all stopped
    assert d["gpu_hours"] == pytest.approx(10 * GPUS * HOURS)
    # Runs of one length and size: GPU-hours freed is the share of eval intervals freed
    # (compute_saved counts evals, N a run, the GPU-hours N - 1 intervals), over the 10
    # matched runs of the 12.
    stops = d["compute_saved"] * 12 * N
    assert 0 < d["post_peak_gpu_hours_freed"] <= d["post_peak_gpu_hours"]
    assert d["gpu_hours_freed"] <= stops / (N - 1) * GPUS * HOURS + 1e-9
    md = (out / "own_runs.md").read_text()
    assert "| default |" in md and "not ground truth" in md and "GPU-hours freed" in md
    assert (out / "own_fit.json").is_file() and "refitted on these runs" in md


def test_gpu_hours_freed_is_the_share_of_intervals_freed_when_every_run_is_matched(tmp_path):
    logs = _logs(tmp_path)
    sacct = _sacct(tmp_path, [f"job{i}" for i in range(12)])
    out = tmp_path / "out"
    assert main(["reproduce", "--logs", str(logs), "--sacct", str(sacct), "--out", str(out),
                 "--no-progress"]) == 0
    for r in _rules(out).values():
        assert r["gpu_hours_freed"] / r["gpu_hours"] == pytest.approx(
            r["compute_saved"] * N / (N - 1))
        if r["post_peak_gpu_hours"]:
            assert r["post_peak_gpu_hours_freed"] / r["post_peak_gpu_hours"] == pytest.approx(
                r["post_peak_freed"])


def test_too_few_runs_to_fit_still_reports_the_rules(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "--logs", str(_logs(tmp_path, n_runs=2)), "--out", str(out),
                 "--no-progress"]) == 0
    assert "workload not refitted" in capsys.readouterr().out
    assert not (out / "own_fit.json").exists() and "not refitted" in (out / "own_runs.md").read_text()
    assert _rules(out)["default"]["n_runs"] == 2


def test_a_bad_sacct_export_fails_before_the_logs_are_read(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("JobIDRaw|Submit\n1|2\n")
    rc = main(["reproduce", "--logs", str(_logs(tmp_path)), "--sacct", str(bad),
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "missing sacct field" in err
    assert "reading logs" not in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["--logs", "{tmp}/missing"], "is not a folder"),
    (["--logs", "{tmp}"], "holds no eval log"),
    (["--sacct", "{tmp}/x.txt"], "--sacct needs --logs"),
    (["--metric", "score"], "--metric needs --logs"),
    (["--logs", "{tmp}", "--only", "main"], "--logs runs no study: --only does not apply"),
    (["--logs", "{tmp}", "--quick"], "--quick does not apply"),
])
def test_bad_logs_options_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path / "empty")) for a in argv]
    rc = main(["reproduce", "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("evalstop: error: ") and err.count("\n") == 1, err
    assert message in err and not (tmp_path / "o").exists()


def test_a_malformed_log_is_one_line_and_writes_nothing(tmp_path, capsys):
    logs = _logs(tmp_path)
    (logs / "broken.jsonl").write_text('{"job": "a", "step": 1, "eval": "high"}\n')
    rc = main(["reproduce", "--logs", str(logs), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "broken.jsonl:1" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_committed_lab_results_are_what_the_command_gives(tmp_path, monkeypatch):
    """benchmarks/results/own_runs (quoted in docs/reproduce.md) is the shipped lab corpus
    run through reproduce --logs, as the page's block does."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lab-runs").mkdir()
    shutil.copy(root / "src" / "evalstop" / "data" / "lab_corpus.jsonl.gz", tmp_path / "lab-runs")
    assert main(["reproduce", "--out", "out", "--logs", "lab-runs", "--no-progress"]) == 0
    committed = json.loads((root / "benchmarks/results/own_runs/own_runs.json").read_text())
    fresh = json.loads((tmp_path / "out" / "own_runs.json").read_text())
    assert fresh["rules"] == committed["rules"] and fresh["runs"] == committed["runs"]


def _logs_with_sizes(tmp_path, gpus=8, every_s=60.0):
    """Six runs whose records carry the scheduler's job id, the GPUs and the time."""
    rng = np.random.default_rng(3)
    lines = [{"job": f"run{i}", "step": s, "eval": float(v), "job_id": str(5000 + i),
              "gpus": gpus, "time": 1e9 + every_s * s}
             for i in range(6) for s, v in enumerate(curve(i % 2 == 0, rng))]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path / "logs"


def test_sizes_come_from_the_logs_own_gpus_and_time(tmp_path):
    out = tmp_path / "out"
    assert main(["reproduce", "--logs", str(_logs_with_sizes(tmp_path)), "--out", str(out),
                 "--no-progress"]) == 0
    data = json.loads((out / "own_runs.json").read_text())
    assert data["sizes"] == {"from_logs": 6, "unsized": 0}
    hours = (N - 1) * 60.0 / 3600.0  # first eval to last, a minute apart
    for r in data["rules"]:
        assert r["gpu_hours"] == pytest.approx(6 * 8 * hours)


def test_sacct_matches_the_logged_job_id_and_wins_over_the_log(tmp_path):
    logs = _logs_with_sizes(tmp_path)
    rows = [HEADER] + [f"{5000 + i}|other{i}|acme|COMPLETED|1000|2000|{2000 + 7200}|"
                       "gres/gpu=2" for i in range(3)]  # three of the six runs' jobs
    (tmp_path / "jobs.txt").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    assert main(["reproduce", "--logs", str(logs), "--sacct", str(tmp_path / "jobs.txt"),
                 "--out", str(out), "--no-progress"]) == 0
    data = json.loads((out / "own_runs.json").read_text())
    assert data["sizes"]["runs_matched"] == 3 and data["sizes"]["from_logs"] == 3
    hours = (N - 1) * 60.0 / 3600.0
    assert data["rules"][0]["gpu_hours"] == pytest.approx(3 * 2 * 2.0 + 3 * 8 * hours)
