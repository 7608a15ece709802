"""A live controller serves /metrics, /healthz and its status page (checked in a real
headless browser); --check-policy prints the effective rules; policy errors are one line."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from headless_browser import chromium_or_skip
from test_watch_page import get, open_in_browser

from evalstop.cli.main import main

DOWN = [0.1, 0.3, 0.5, 0.4, 0.2]  # k=2 stops at step 5, best step 3


@pytest.fixture
def live(tmp_path):
    logs = tmp_path / "logs" / "team-a"
    logs.mkdir(parents=True)
    with open(logs / "run.jsonl", "w") as fh:
        for step, v in enumerate(DOWN, 1):
            fh.write(json.dumps({"job": "declining", "step": step, "eval": v}) + "\n")
            fh.write(json.dumps({"job": "rising", "step": step, "eval": step / 10}) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstop.cli.main", "watch", "--jsonl", str(tmp_path / "logs"),
         "--db", str(tmp_path / "s.db"), "--detector", "evalstop:k=2", "--interval", "0.2",
         "--action", "true", "--serve", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stderr], daemon=True).start()
    try:
        first = lines.get(timeout=60)
        m = re.search(r"serving (http://[\d.]+:\d+)/", first)
        assert m, first
        base = m.group(1)
        deadline = time.monotonic() + 60  # until the stop's action has been recorded
        while time.monotonic() < deadline:
            if 'evalstop_actions_total{outcome="done"} 1.0' in get(base + "/metrics")[1]:
                break
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()


def test_metrics_and_health_on_a_live_controller(live):
    code, text = get(live + "/metrics")
    assert code == 200
    assert 'evalstop_evals_ingested_total{tenant="team-a"} 10.0' in text
    assert 'evalstop_stops_total{tenant="team-a"} 1.0' in text
    assert 'evalstop_actions_total{outcome="done"} 1.0' in text
    assert 'evalstop_jobs_followed{state="stopped"} 1.0' in text
    assert "evalstop_action_seconds_count 1.0" in text
    assert "evalstop_ingest_lag_seconds" in text
    assert get(live + "/healthz") == (200, "ok\n")
    code, html = get(live + "/")
    assert code == 200 and "declining" in html and "stopped@5" in html


def test_live_page_in_a_real_browser(live, tmp_path):
    chromium_or_skip()
    info, errors = open_in_browser(live + "/", str(tmp_path / "live.png"))
    assert errors == []
    assert info["rows"] == 2
    assert info["points"] == 5 and info["stop"] == 1  # the stopped job's curve, stop marked


def test_check_policy_prints_each_tenants_rule(tmp_path, capsys):
    pol = tmp_path / "p.toml"
    pol.write_text('[defaults]\ndetector = "evalstop:k=3"\n[tenants.a]\nmode = "min"\n'
                   '[tenants.b]\ndry_run = true\n')
    assert main(["watch", "--policy", str(pol), "--check-policy"]) == 0
    out = capsys.readouterr().out
    assert "[tenants.a]" in out and "[tenants.b]" in out and 'mode = "min"' in out
    assert 'detector = "evalstop:k=3"' in out and "dry_run = true" in out


@pytest.mark.parametrize("argv, message", [
    (["--policy", "P", "--check-policy"], "P: tenants.a.mode: must be"),
    (["--policy", "P", "--detector", "evalstop:k=2", "--db", "x.db", "--jsonl", "."],
     "--policy replaces --detector"),
    (["--check-policy"], "--check-policy needs --policy"),
    (["--jsonl", ".", "--db", "x.db", "--serve", "localhost"], "--serve must be [HOST:]PORT"),
    (["--jsonl", ".", "--db", "x.db", "--serve", "0.0.0.0:9100"],
     "serving beyond loopback needs --serve-token-file"),
    (["--jsonl", ".", "--db", "x.db", "--serve", "9100", "--page-size", "0"],
     "--page-size must be in 1..1000"),
    (["--jsonl", ".", "--db", "x.db", "--serve", "0.0.0.0:9100", "--serve-token-file", "P"],
     "must hold one token of at least 16"),
])
def test_policy_and_serve_errors_are_one_line(tmp_path, capsys, argv, message):
    pol = tmp_path / "p.toml"
    pol.write_text('[tenants.a]\nmode = "upwards"\n')
    argv = [str(pol) if a == "P" else a for a in argv]
    message = message.replace("P:", f"{pol}:")
    assert main(["watch", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_refused_serve_creates_no_state_database(tmp_path, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        db = tmp_path / "state.db"
        rc = main(["watch", "--jsonl", str(tmp_path), "--db", str(db), "--once",
                   "--serve", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("evalstop: error:"), err
    assert not db.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value, address", [
    ("9100", ("127.0.0.1", 9100)),  # loopback unless a host is named
    ("0.0.0.0:9100", ("0.0.0.0", 9100)),
    ("[::1]:0", ("::1", 0)),
])
def test_serve_address(value, address):
    from evalstop.cli.watch import _parse_serve

    assert _parse_serve(value) == address


def test_a_token_file_opens_the_server_beyond_loopback(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef-secret\n")
    (tmp_path / "logs").mkdir()
    rc = main(["watch", "--once", "--jsonl", str(tmp_path / "logs"), "--db",
               str(tmp_path / "s.db"), "--serve", "0.0.0.0:0", "--serve-token-file",
               str(token)])
    assert rc == 0, capsys.readouterr().err
    assert "serving http://0.0.0.0:" in capsys.readouterr().err
