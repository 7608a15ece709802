"""`evalstop replay`: its documented output contract and one-line errors on bad input."""

import json
import subprocess
import sys

import pytest

from evalstop.cli.main import main


def write(tmp_path, lines, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def replay(capsys, *args):
    rc = main(["replay", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, [json.loads(x) for x in out.splitlines()], err


def test_contract_interleaved_out_of_order(tmp_path, capsys):
    recs = [
        {"job": "b", "step": 2, "eval": 0.5},
        {"job": "a", "step": 1, "eval": 0.1},
        {"job": "b", "step": 1, "eval": 0.4},
        {"job": "a", "step": 3, "eval": 0.25, "loss": 1.0, "proxy": 2.0, "progress": 0.3},
        {"job": "a", "step": 2, "eval": 0.3},
        {"job": "a", "step": 4, "eval": 0.2, "time": 12.5},
        {"job": "b", "step": 3, "eval": 0.6},
    ]
    log = write(tmp_path, [json.dumps(r) for r in recs])
    rc, out, err = replay(capsys, log, "--detector", "evalstop:k=2")
    assert rc == 0 and err == ""
    assert out == [
        {"job": "b", "stopped": False, "stop_step": None, "best_step": 3, "best_eval": 0.6,
         "reason": "ran to the end"},
        {"job": "a", "stopped": True, "stop_step": 4, "best_step": 2, "best_eval": 0.3,
         "reason": "2 consecutive declines"},
    ]


def test_min_mode_and_default_detector(tmp_path, capsys):
    log = write(tmp_path, [json.dumps({"job": "x", "step": s, "eval": e})
                           for s, e in [(1, 3.0), (2, 2.0), (3, 2.5), (4, 2.7)]])
    rc, out, _ = replay(capsys, log, "--mode", "min")
    assert rc == 0 and out[0]["best_step"] == 2 and out[0]["best_eval"] == 2.0


@pytest.mark.parametrize("lines, message", [
    (['{"job": "a", "step": 1, "eval": 0.1}', "{not json"], "log.jsonl:2: not valid JSON"),
    (['{"job": "a", "eval": 0.1}'], "log.jsonl:1: missing 'step'"),
    (['{"job": "a", "step": 1.5, "eval": 0.1}'], "'step' must be an integer"),
    (['{"job": "a", "step": 1, "eval": "high"}'], "'eval' must be a number"),
    (['[1, 2]'], "expected a JSON object"),
    (['{"job": "a", "step": 1, "eval": 0.1}', '{"job": "a", "step": 1, "eval": 0.2}'],
     "job 'a' has step 1 twice"),
    (['{"job": "a", "step": 1, "eval": 0.1, "progress": 2}'], "'progress' must be in"),
    # Steps outside a non-negative int64 (they overflowed numpy/SQLite further on).
    (['{"job": "a", "step": -1, "eval": 0.1}'],
     "log.jsonl:1: 'step' must be in 0..2**63-1 (a non-negative int64), got -1"),
    (['{"job": "a", "step": 9223372036854775808, "eval": 0.1}'], "must be in 0..2**63-1"),
    (['{"job": "a", "step": 1e308, "eval": 0.1}'], "must be in 0..2**63-1"),
])
def test_bad_logs_give_one_line_errors(tmp_path, capsys, lines, message):
    rc, out, err = replay(capsys, write(tmp_path, lines), "--detector", "evalstop:k=2")
    assert rc == 2 and out == []
    assert message in err and err.count("\n") == 1 and err.startswith("evalstop: error:")


def test_unknown_detector_and_missing_file(tmp_path, capsys):
    log = write(tmp_path, ['{"job": "a", "step": 1, "eval": 0.1}'])
    rc, _, err = replay(capsys, log, "--detector", "magic:k=2")
    assert rc == 2 and "unknown detector 'magic'" in err
    rc, _, err = replay(capsys, tmp_path / "nope.jsonl")
    assert rc == 2 and "cannot read" in err


@pytest.mark.parametrize("lines", [[], [""], ["   ", ""]])
def test_an_empty_log_is_an_error_not_silence(tmp_path, capsys, lines):
    """No output and exit 0 would read as "no job needed stopping"."""
    rc, out, err = replay(capsys, write(tmp_path, lines), "--detector", "default")
    assert rc == 2 and out == []
    assert err.startswith("evalstop: error: ") and err.count("\n") == 1
    assert "no eval records in the log" in err


def test_nan_eval_is_ignored(tmp_path, capsys):
    log = write(tmp_path, ['{"job": "a", "step": 1, "eval": 0.5}',
                           '{"job": "a", "step": 2, "eval": NaN}',
                           '{"job": "a", "step": 3, "eval": null}',
                           '{"job": "a", "step": 4, "eval": 0.4}'])
    rc, out, _ = replay(capsys, log, "--detector", "evalstop:k=1")
    assert rc == 0 and out[0]["stop_step"] == 4 and out[0]["best_step"] == 1


def test_console_script_runs(tmp_path):
    log = write(tmp_path, ['{"job": "a", "step": 1, "eval": 0.5}'])
    r = subprocess.run([sys.executable, "-m", "evalstop.cli.main", "replay", str(log)],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and json.loads(r.stdout)["job"] == "a"


# Logs that real tools write: a byte-order mark (Windows editors, PowerShell) and CRLF.
@pytest.mark.parametrize("data", [
    b'\xef\xbb\xbf{"job": "a", "step": 1, "eval": 0.5}\n{"job": "a", "step": 2, "eval": 0.4}\n',
    b'{"job": "a", "step": 1, "eval": 0.5}\r\n{"job": "a", "step": 2, "eval": 0.4}\r\n',
])
def test_bom_and_crlf_logs_are_accepted(tmp_path, capsys, data):
    log = tmp_path / "log.jsonl"
    log.write_bytes(data)
    rc, out, err = replay(capsys, log, "--detector", "evalstop:k=1")
    assert rc == 0 and err == "" and out[0]["stop_step"] == 2


@pytest.mark.parametrize("data, message", [
    (b'{"job": "a", "step": 1e400, "eval": 0.1}\n', "'step' must be an integer, got inf"),
    (b'{"job": "a", "step": 1, "eval": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "log.jsonl:1: JSON nested too deeply"),
    (b'\xff\xfe{"job": "a"}\n', "log.jsonl: not UTF-8 text"),
])
def test_hostile_lines_are_one_line_errors_not_tracebacks(tmp_path, capsys, data, message):
    log = tmp_path / "log.jsonl"
    log.write_bytes(data)
    rc, out, err = replay(capsys, log)
    assert rc == 2 and out == []
    assert message in err and err.count("\n") == 1 and err.startswith("evalstop: error:")


def test_closed_pipe_is_a_quiet_exit(tmp_path):
    """`evalstop replay log | head -1`: the reader leaving is not an error."""
    log = write(tmp_path, [json.dumps({"job": f"j{j}", "step": 1, "eval": 0.5})
                           for j in range(30_000)])  # output well past a pipe buffer
    p = subprocess.Popen([sys.executable, "-m", "evalstop.cli.main", "replay", str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0 and err == b""
