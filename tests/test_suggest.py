""""Did you mean": the nearest known name in one-line errors (difflib), across the CLI."""

from __future__ import annotations

import pytest

from evalstop.cli.main import main
from evalstop.suggest import closest, did_you_mean, unknown


@pytest.mark.parametrize("word, known, hit", [
    ("builtin:phily", ["builtin:philly"], "builtin:philly"),
    ("CUSUM-DROP", ["cusum-drop", "noise-drop"], "cusum-drop"),
    ("zzz", ["cusum-drop", "noise-drop"], None),  # nothing close: no guess
    ("x", [], None),
])
def test_closest(word, known, hit):
    assert closest(word, known) == hit


def test_the_message_names_the_guess_and_every_known_name():
    assert did_you_mean("mian", ["main", "k"]) == " (did you mean 'main'?)"
    assert did_you_mean("zzz", ["main"]) == ""
    assert unknown("experiment", "mian", ["main", "k"]) == (
        "unknown experiment 'mian' (did you mean 'main'?); known: main, k")


@pytest.mark.parametrize("argv, message", [
    (["reproduce", "--quik"], "unrecognized arguments: --quik (did you mean --quick?)"),
    # (not a prefix: argparse takes "--no-detector" as --no-detectors and runs)
    (["reproduce", "--no-detecters"], "(did you mean --no-detectors?)"),
    (["lab", "corpus", "--wrokers", "2"], "(did you mean --workers?)"),
    (["reproduc"], "invalid choice: 'reproduc'"),
    (["reproduc"], "(did you mean 'reproduce'?)"),
    (["simulate", "--jobs", "j.csv", "--gpus", "8", "--scheduler", "fifx", "--out", "o.csv"],
     "(did you mean 'fifo'?)"),
    (["simulate", "--jobs", "builtin:phily", "--gpus", "8", "--scheduler", "fifo",
      "--out", "OUT"], "unknown built-in trace 'builtin:phily' (did you mean 'builtin:philly'?)"),
    (["reproduce", "--only", "mian", "--out", "OUT"], "(did you mean 'main'?)"),
    (["reproduce", "--preset", "paper-asumptions", "--out", "OUT"],
     "(did you mean 'paper-assumptions'?)"),
    (["replay", "LOG", "--detector", "cusum-drp"], "(did you mean 'cusum-drop'?)"),
    (["replay", "LOG", "--detector", "evalstop:k=abc"], "k='abc' is not an int"),
])
def test_the_cli_suggests_the_fix(tmp_path, capsys, argv, message):
    log = tmp_path / "log.jsonl"
    log.write_text('{"job": "a", "step": 1, "eval": 0.5}\n')
    argv = [str(log) if a == "LOG" else str(tmp_path / "out") if a == "OUT" else a
            for a in argv]
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def _exit_code(argv) -> int:
    """main's return, or argparse's exit for a usage error (an option or a choice)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code
