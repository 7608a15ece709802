"""`evalstop reproduce`: a --quick run end to end, and one-line errors on bad options."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evalstop.cli.main import main
from evalstop.workload import read_jobs


def test_quick_reproduce_writes_the_report(tmp_path):
    out = tmp_path / "res"
    # A subprocess with a timeout, a guard against a hung pool (not a speed target): the
    # quick run takes about 45 s on 2 cores, the detector benchmark's quick version and the
    # ~1,600 simulations of the frontier study included.
    proc = subprocess.run(
        [sys.executable, "-m", "evalstop.cli.main", "reproduce", "--quick", "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert (out / "results.json").is_file() and (out / "main_summary.csv").is_file()
    assert str(out / "report.html") in proc.stdout  # says where the report is
    # the detector benchmark runs by default, into its own folder, with a report section
    assert (out / "detectors" / "detectors.json").is_file()
    md = (out / "report.md").read_text()
    assert "Detector benchmark" in md and "Held-out part (NOT tuned on)" in md
    assert "Which misses were there to see" in md and "Recall, SNR >= 4" in md
    assert "](detectors/pr_held_out.png)" in md
    assert "default_rule" in md and "The issue's target" in md
    assert "(`frontier`)" in md and "What precision costs" in md
    assert "**With the eval noise measured** from these logs" in md  # real_corpus
    assert "The noise measured from finished runs" in md  # the benchmark's section
    # stderr is a pipe here, as in CI: progress as lines, the benchmark's (another process) too
    assert "simulating: 0/" in proc.stderr and "bench-detectors: " in proc.stderr
    assert "\r" not in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "--seeds must be >= 1, got 0"),
    (["--workers", "-2"], "--workers must be >= 1, got -2"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--only", "main,bogus"], "unknown experiment 'bogus'"),
])
def test_bad_option_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    rc = main(["reproduce", "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "o").exists()  # rejected before any work


def test_only_one_experiment_in_process(tmp_path, capsys):
    rc = main(["reproduce", "--out", str(tmp_path), "--quick", "--only", "main", "--seeds", "2",
               "--workers", "1", "--no-progress", "--no-detectors"])
    assert rc == 0
    assert (tmp_path / "main_runs.csv").is_file() and not (tmp_path / "k_runs.csv").exists()
    assert not (tmp_path / "detectors").exists()
    assert "Detector benchmark" not in (tmp_path / "report.md").read_text()
    cap = capsys.readouterr()
    assert "report:" in cap.out and cap.err == ""  # --no-progress: no progress lines either


def test_huge_seeds_is_refused_not_a_hang(tmp_path, capsys):
    # 99999999999999 used to hang while the task list was built.
    rc = main(["reproduce", "--out", str(tmp_path / "o"), "--seeds", "99999999999999"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--seeds must be <= " in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("out, message", [
    ("FILE", "is a file, not a folder"),
    ("", "--out must name a folder"),
])
def test_bad_out_fails_before_the_studies(tmp_path, capsys, monkeypatch, out, message):
    (tmp_path / "FILE").write_text("keep me\n")
    monkeypatch.chdir(tmp_path)
    # If the studies ran they would take far longer than the error; make them fail loudly.
    monkeypatch.setattr("evalstop.cli.reproduce.run_experiments",
                        lambda *a, **k: pytest.fail("ran the studies before checking --out"))
    rc = main(["reproduce", "--out", out, "--quick", "--only", "main", "--no-detectors"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err
    assert (tmp_path / "FILE").read_text() == "keep me\n"


@pytest.mark.parametrize("argv, message", [
    (["--runs", "999999999999"], "--runs must be <= "),  # was a MemoryError traceback
    (["--seed", "-1"], "--seed must be >= 0, got -1"),  # was numpy's message, no option
    (["--out", "FILE"], "is a file, not a folder"),  # was "[Errno 17] File exists"
    (["--out", ""], "--out must name a folder"),  # used to write into the current folder
])
def test_bench_detectors_bad_input_is_one_line(tmp_path, capsys, monkeypatch, argv, message):
    (tmp_path / "FILE").write_text("keep me\n")
    monkeypatch.chdir(tmp_path)
    rc = main(["bench-detectors", "--out", "b", "--quick", "--no-progress", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]
    assert (tmp_path / "FILE").read_text() == "keep me\n"


# A real export: the local Slurm testbed's base run of 200 jobs (benchmarks/bench_slurm.py).
SACCT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "slurm" / "sacct_base.txt"
TRACE_RUN = ["--seeds", "1", "--workers", "1", "--no-progress", "--no-detectors",
             "--trace-gpus", "64"]


def _summary(folder: Path) -> list[dict]:
    with open(folder / "scale_summary.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_trace_study_runs_on_a_sacct_export_as_on_the_same_jobs_as_a_csv(tmp_path, capsys):
    out = tmp_path / "sacct"
    assert main(["reproduce", "--out", str(out), "--trace", str(SACCT), *TRACE_RUN]) == 0
    rows = _summary(out)
    assert {r["experiment"] for r in rows} == {"scale"} and {r["point"] for r in rows} == {"trace"}
    assert not (out / "main_runs.csv").exists()  # only the trace studies run
    md = (out / "report.md").read_text()
    assert f"--trace {SACCT}" in md and f"the 200 jobs of {SACCT}, on 64 GPUs" in md
    # The same jobs written as a job CSV give the same study, figure for figure: the export
    # is read as a trace, nothing more.
    table = read_jobs(SACCT)
    jobs = tmp_path / "jobs.csv"
    with open(jobs, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "arrival_s", "duration_s", "gpus", "tenant"])
        w.writerows(zip(table.job_id, table.arrival_s.tolist(), table.duration_s.tolist(),
                        table.gpus.tolist(), table.tenant.tolist(), strict=True))
    as_csv = tmp_path / "csv"
    assert main(["reproduce", "--out", str(as_csv), "--trace", str(jobs), *TRACE_RUN]) == 0
    assert [r["mean"] for r in _summary(as_csv)] == [r["mean"] for r in rows]


def _export(tmp_path: Path, edit) -> str:
    lines = SACCT.read_text().splitlines()[:6]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(edit(lines)) + "\n")
    return str(path)


def _with(lines: list[str], field: str, value) -> list[str]:
    """The export's first job with ``field`` set (``value``: a text, or a function of the
    old text), found by the header: the committed export's times change when it is rerun."""
    names = lines[0].split("|")
    cells = lines[1].split("|")
    at = names.index(field)
    cells[at] = value(cells[at]) if callable(value) else value
    return [lines[0], "|".join(cells), *lines[2:]]


def _fifo(tmp_path: Path) -> str:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("make, argv, message", [
    (lambda t: str(t / "missing.txt"), [], "missing.txt"),
    (lambda t: _export(t, lambda ls: [ls[0].replace("|AllocTRES", "|Other"), *ls[1:]]), [],
     "AllocTRES"),
    # End before Start: a negative run time
    (lambda t: _export(t, lambda ls: _with(ls, "End", "2000-01-01T00:00:00")), [],
     "bad.txt:2: End is before Start"),
    (lambda t: _export(t, lambda ls: _with(ls, "AllocTRES", lambda v: re.sub(
        r"gres/gpu=\d+", "gres/gpu=x", v))), [], "bad.txt:2: "),
    (lambda t: _export(t, lambda ls: _with(ls, "Start", "nan")), [], "bad.txt:2: "),
    (_fifo, [], "fifo: a FIFO (named pipe), not a regular file"),
    (lambda t: str(SACCT), ["--only", "main"], "none of the selected studies replays a trace"),
    (lambda t: str(SACCT), ["--trace-gpus", "0"], "--trace-gpus must be >= 1, got 0"),
])
def test_bad_trace_is_one_line_and_exit_2(tmp_path, capsys, make, argv, message):
    rc = main(["reproduce", "--out", str(tmp_path / "o"), "--trace", make(tmp_path), *argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("evalstop: error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o").exists()  # rejected before any work


def test_trace_gpus_without_trace_is_refused(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path / "o"), "--trace-gpus", "8"]) == 2
    assert "--trace-gpus needs --trace" in capsys.readouterr().err
