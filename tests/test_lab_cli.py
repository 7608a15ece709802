"""`evalstop lab`: bad input is one line on stderr and exit 2; a short run works."""

import json

import pytest

from evalstop.cli.main import main


@pytest.mark.parametrize("argv, message", [
    (["lab", "run", "--pairs", "0", "--beta", "0", "--seed", "0", "--out", "X"], "pairs must be"),
    (["lab", "run", "--pairs", "10", "--beta", "-1", "--seed", "0", "--out", "X"], "beta must be"),
    (["lab", "run", "--pairs", "10", "--beta", "0", "--seed", "-3", "--out", "X"], "seed must be"),
    (["lab", "run", "--pairs", "10", "--beta", "0", "--seed", "0", "--steps", "25", "--out", "X"],
     "multiple of eval_every"),
    (["lab", "run", "--pairs", "10", "--beta", "0", "--seed", "0"], "--out"),
    (["lab", "run", "--pairs", "ten", "--beta", "0", "--seed", "0", "--out", "X"], "invalid int"),
    (["lab", "corpus", "--workers", "0", "--out", "X"], "--workers must be >= 1"),
    (["lab", "corpus", "--pairs", "100,x", "--out", "X"], "comma-separated integers"),
    (["lab", "corpus", "--betas", "0,-0.5", "--out", "X"], "beta must be"),
    (["lab", "corpus", "--seeds", "0", "--out", "X"], "--seeds must be >= 1"),
    (["lab"], "required"),
])
def test_bad_input_is_one_line_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "X").exists()  # nothing written on bad input


def test_out_is_a_file(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    rc = main(["lab", "run", "--pairs", "10", "--beta", "0", "--seed", "0", "--out", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and "is a file" in err and len(err.strip().splitlines()) == 1


def test_short_run_writes_log_label_meta(capsys, tmp_path):
    pytest.importorskip("torch")
    rc = main(["lab", "run", "--pairs", "100", "--beta", "0", "--seed", "0", "--steps", "30",
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("p100-b0-s0: ")
    recs = [json.loads(x) for x in (tmp_path / "p100-b0-s0.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 10, 20, 30]
    assert (tmp_path / "p100-b0-s0.label.json").is_file()
    assert (tmp_path / "p100-b0-s0.meta.json").is_file()


def test_missing_torch_names_the_extra(capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    rc = main(["lab", "run", "--pairs", "10", "--beta", "0", "--seed", "0", "--steps", "30",
               "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "pip install 'evalstop[lab]'" in err
    assert len(err.strip().splitlines()) == 1
