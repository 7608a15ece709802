"""``evalstop watch`` on the command line: --once, --status, --dry-run, signals, errors."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from evalstop.cli.main import main

K2 = ["--detector", "evalstop:k=2"]
PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]


def _log(tmp_path, jobs=("peak",), curve=PEAK):
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    with open(logs / "evals.jsonl", "a") as fh:
        for step, ev in enumerate(curve, 1):
            fh.writelines(json.dumps({"job": job, "step": step, "eval": ev}) + "\n" for job in jobs)
    return logs


def test_once_then_status(tmp_path, capsys):
    logs = _log(tmp_path, jobs=("peak", "other"))
    db = tmp_path / "s.db"
    marker = tmp_path / "acts.txt"
    rc = main(["watch", "--jsonl", str(logs), "--db", str(db), "--once", *K2,
               "--action", f"echo {{job}} {{best_step}} >> {marker}"])
    out = capsys.readouterr()
    src = os.path.realpath(logs / "evals.jsonl")
    err = out.err.splitlines()
    assert rc == 0 and len(err) == 1
    assert err[0] == (f"evalstop watch: following jsonl:{os.path.realpath(logs)}; rules: every "
                      f"tenant: evalstop:k=2, mode max, action 'echo {{job}} {{best_step}} >> "
                      f"{marker}'; no page (give --serve HOST:PORT for one); state {db}")
    said = out.out.splitlines()
    assert sorted(said[2:]) == [f"job {j} [{src}]: action exited 0 (no output)"
                                for j in ("other", "peak")]
    assert said[:2] == [
        (f"stop peak at step 5: 2 consecutive declines; best step 3 (score 0.5); tenant evals, "
         f"source {src}"),
        (f"stop other at step 5: 2 consecutive declines; best step 3 (score 0.5); tenant evals, "
         f"source {src}"),
    ]
    # actions run in a pool, so their order in the file is not fixed
    assert sorted(marker.read_text().splitlines()) == ["other 3", "peak 3"]
    assert main(["watch", "--status", "--db", str(db)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["tenant", "job"] and table[3] == "2 jobs, 2 stopped"
    assert sorted(table[5:]) == ["  evals/other: done, exit 0: (no output)",
                                 "  evals/peak: done, exit 0: (no output)"]
    assert main(["watch", "--status", "--db", str(db), "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {r["job"]: (r["stop_step"], r["best_step"], r["streak"], r["action"])
            for r in rows} == {"peak": (5, 3, 2, "done"), "other": (5, 3, 2, "done")}


def test_action_output_in_status_json_page_and_log(tmp_path, capsys):
    from evalstop.integrations.watch.status import page_html

    logs = _log(tmp_path, jobs=("peak",))
    db = tmp_path / "s.db"
    rc = main(["watch", "--jsonl", str(logs), "--db", str(db), "--once", *K2, "--action",
               "echo suspended {job}; echo 'second <line>' >&2; exit 3"])
    err = capsys.readouterr().err
    assert rc == 0
    src = os.path.realpath(logs / "evals.jsonl")
    assert f"job peak [{src}]: action exited 3: second <line>" in err
    assert main(["watch", "--status", "--db", str(db), "--json"]) == 0
    (row,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (row["action"], row["action_rc"]) == ("failed", 3)
    assert row["action_output"].splitlines() == ["suspended peak", "second <line>"]
    assert row["rule"] == "evalstop:k=2 (mode max)"
    assert main(["watch", "--status", "--db", str(db)]) == 0
    assert "  evals/peak: failed, exit 3: second <line>" in capsys.readouterr().out
    page = page_html(str(db))
    assert "suspended peak\nsecond &lt;line&gt;</pre>" in page
    assert ("<summary>rule evalstop:k=2</summary><code>evalstop:k=2 (mode max)</code>"
            in page)


def test_dry_run_leaves_no_state(tmp_path, capsys):
    logs = _log(tmp_path)
    db = tmp_path / "s.db"
    rc = main(["watch", "--jsonl", str(logs), "--db", str(db), "--once", "--dry-run", *K2,
               "--action", "scancel --name={job}"])
    assert rc == 0
    assert "dry-run: would run for peak: scancel --name=peak" in capsys.readouterr().out
    assert not db.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--once"], "give at least one --jsonl DIR, --tensorboard DIR or --mlflow URI"),
        (["--once", "--jsonl", "NOPE"], "--jsonl 'NOPE' is not a directory"),
        (["--once", "--jsonl", "LOGS", "--detector", "nope"], "unknown detector 'nope'"),
        (["--once", "--jsonl", "LOGS", "--action", "x {jobid}"], "unknown placeholder"),
        (["--jsonl", "LOGS", "--interval", "0"], "--interval must be > 0"),
        (["--status"], "no controller state at"),
        (["--once", "--jsonl", "LOGS", "--mode", "up"], "invalid choice"),
        (["--once", "--jsonl", "LOGS", "--tenant-pattern", "("], "bad --tenant-pattern"),
        (["--once", "--jsonl", "LOGS", "--tenant-pattern", "x"], "needs a named group"),
        (["--once", "--jsonl", "LOGS", "--job-prefix", "x-"], "must contain {tenant}"),
        (["--once", "--jsonl", "LOGS", "--action-workers", "0"], "--action-workers must be"),
        (["--once", "--jsonl", "LOGS", "--action", "x {best_checkpoint}",
          "--checkpoint-template", "{job}/ck"], "give --checkpoint-root"),
        (["--once", "--jsonl", "LOGS", "--action", "x '{job}'"], "inside '-quotes"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    logs = _log(tmp_path)
    argv = [str(logs) if a == "LOGS" else a for a in argv]
    db = tmp_path / ("missing" if "--status" in argv else "") / "s.db"
    try:
        rc = main(["watch", "--db", str(db), *argv])
    except SystemExit as exc:  # argparse's own usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_tensorboard_extra_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto.event_pb2",
                        None)
    rc = main(["watch", "--tensorboard", str(tmp_path), "--db", str(tmp_path / "s.db"),
               "--once"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == ("evalstop: error: evalstop watch --tensorboard needs tensorboard: "
                           "pip install 'evalstop[watch]'")


def _jobs_fed(db):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        n = con.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_polling_loop_stops_cleanly_on_signals(tmp_path, sig):
    logs = _log(tmp_path, curve=[0.1, 0.2])
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstop.cli.main", "watch", "--jsonl", str(logs), "--db",
         str(db), "--interval", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 20
    while _jobs_fed(db) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _jobs_fed(db) == 1
    started = time.monotonic()
    proc.send_signal(sig)  # it is waiting out a 120 s interval: it must wake at once
    # Bounds far below the interval but far above a wake-up on a loaded machine (10 s
    # timed out once with the load average at 10 on 2 cores).
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 30
    lines = err.strip().splitlines()
    assert lines[0].startswith("evalstop watch: following jsonl:")
    assert lines[1:] == ["evalstop watch: stopped"]
    # It released the state: another controller can take it.
    assert main(["watch", "--jsonl", str(logs), "--db", str(db), "--once"]) == 0


@pytest.mark.parametrize("argv, message", [
    # inf and 1e300 were OverflowError tracebacks (Event.wait, subprocess timeouts).
    (["--jsonl", "LOGS", "--interval", "inf"], "--interval must be > 0 and <= "),
    (["--jsonl", "LOGS", "--interval", "1e300"], "--interval must be > 0 and <= "),
    (["--jsonl", "LOGS", "--interval", "nan"], "--interval must be > 0 and <= "),
    (["--once", "--jsonl", "LOGS", "--action", "echo {job}", "--action-timeout", "inf"],
     "--action-timeout must be > 0 and <= "),
])
def test_huge_durations_are_one_line(tmp_path, capsys, argv, message):
    logs = _log(tmp_path)
    argv = [str(logs) if a == "LOGS" else a for a in argv]
    rc = main(["watch", "--db", str(tmp_path / "s.db"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.db").exists()  # checked before any state is made


def test_bom_crlf_and_hostile_lines(tmp_path, capsys):
    """A BOM (Windows tools) and CRLF are read; a step of 1e400 (inf) or JSON nested
    thousands deep is reported and skipped, where it used to stop the controller with a
    traceback."""
    logs = tmp_path / "logs"
    logs.mkdir()
    curve = "".join(json.dumps({"job": "bom", "step": s, "eval": e}) + "\r\n"
                    for s, e in enumerate(PEAK, 1))
    (logs / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + curve.encode())
    (logs / "bad.jsonl").write_bytes(b'{"job": "x", "step": 1e400, "eval": 0.1}\n'
                                     + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    rc = main(["watch", "--once", "--jsonl", str(logs), "--db", str(tmp_path / "s.db"), *K2])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err
    assert "'step' must be an integer, got inf; refused" in err
    assert "JSON nested too deeply; refused" in err
    assert main(["watch", "--status", "--json", "--db", str(tmp_path / "s.db")]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    # k=2 stops at step 5; 5 evals means the first line, after the BOM, was read too.
    assert [(r["job"], r["evals"]) for r in rows] == [("bom", 5)]


@pytest.mark.parametrize("argv, db, message", [
    (["--once", "--jsonl", "LOGS"], "", "--db must name a file"),  # was exit 0, state lost
    (["--once", "--jsonl", "LOGS"], "DIR", "is a folder, not a file"),
    (["--status"], "DIR", "is a folder, not a file"),  # was a sqlite3 traceback
])
def test_db_that_cannot_hold_state_is_one_line(tmp_path, capsys, argv, db, message):
    logs = _log(tmp_path)
    (tmp_path / "DIR").mkdir()
    argv = [str(logs) if a == "LOGS" else a for a in argv]
    db = str(tmp_path / db) if db else db
    rc = main(["watch", "--db", db, *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR", "logs"]  # no stray .lock


def test_help_says_symlinks_are_not_followed(capsys):
    with pytest.raises(SystemExit):
        main(["watch", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Symbolic links under a watched directory are never followed" in text
    assert "{tenant}" in text and "--checkpoint-root" in text


def test_budget_flags_reach_the_sources_and_bad_values_are_one_line(tmp_path, capsys):
    logs = tmp_path / "logs"
    (logs / "t").mkdir(parents=True)
    (logs / "t" / "a.jsonl").write_text("".join(
        json.dumps({"job": "j", "step": s, "eval": float(s)}) + "\n" for s in range(1, 31)))
    rc = main(["watch", "--jsonl", str(logs), "--db", str(tmp_path / "s.db"), "--once",
               "--budget-lines", "7", "--max-jobs", "5", "--keep-evals", "10"])
    assert rc == 0
    con = sqlite3.connect(tmp_path / "s.db")
    assert con.execute("SELECT n_evals FROM jobs").fetchall() == [(30,)]  # over 5 polls
    assert con.execute("SELECT COUNT(*) FROM evals").fetchone() == (10,)
    con.close()
    capsys.readouterr()
    for flag in ("--budget-lines", "--budget-bytes", "--budget-files", "--budget-events",
                 "--max-jobs", "--keep-evals"):
        rc = main(["watch", "--jsonl", str(logs), "--db", str(tmp_path / "t.db"), "--once",
                   flag, "0"])
        assert rc == 2
        assert capsys.readouterr().err.strip() == f"evalstop: error: {flag} must be >= 1, got 0"
