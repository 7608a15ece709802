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
    (["lab", "run", "--world", "nope", "--pairs", "10", "--beta", "0", "--seed", "0", "--out",
      "X"], "unknown lab world 'nope'"),
    (["lab", "corpus", "--world", "nope", "--out", "X"], "unknown lab world 'nope'"),
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


RUN = ["lab", "run", "--seed", "0", "--out", "X"]


@pytest.mark.parametrize("argv, message", [
    # Each was a traceback or a run that would never end.
    (RUN + ["--pairs", "99999999999999", "--beta", "0"], "pairs must be <= "),  # MemoryError
    (RUN + ["--pairs", "10", "--beta", "1e100"], "beta must be <= "),  # NaN probabilities
    (RUN + ["--pairs", "10", "--beta", "0", "--steps", "99999999999990", "--eval-every", "10"],
     "steps must be <= "),
    (["lab", "corpus", "--seeds", "99999999999", "--out", "X"], "--seeds must be <= "),
    (RUN[:-1] + ["", "--pairs", "10", "--beta", "0"], "--out must name a folder"),
])
def test_huge_values_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_pack_dir_is_a_file_fails_before_any_run(capsys, tmp_path, monkeypatch):
    # It used to fail only when packing, after every run of the grid.
    (tmp_path / "FILE").write_text("keep me\n")
    monkeypatch.setattr("evalstop.lab.generate.generate",
                        lambda *a, **k: pytest.fail("ran before checking --pack-dir"))
    rc = main(["lab", "corpus", "--pairs", "10", "--betas", "0", "--seeds", "1",
               "--steps", "30", "--out", str(tmp_path / "runs"),
               "--pack-dir", str(tmp_path / "FILE")])
    err = capsys.readouterr().err
    assert rc == 2 and "--pack-dir" in err and "is a file, not a folder" in err
    assert len(err.strip().splitlines()) == 1
    assert (tmp_path / "FILE").read_text() == "keep me\n" and not (tmp_path / "runs").exists()
