"""Dense-eval lab runs on a fixed eval set (evalstop.lab.dense, RunConfig.eval_set): the
fixed set's properties, the CLI, and the shipped tuning and held-out corpora."""

import json
from importlib import resources

import numpy as np
import pytest

from evalstop.cli.main import main
from evalstop.lab.config import RunConfig
from evalstop.lab.corpus import load_corpus
from evalstop.lab.dense import (
    DENSE,
    dense_grid,
    dense_spec,
    load_dense_corpus,
    load_dense_metadata,
)
from evalstop.lab.labels import label_curve

TINY = {"steps": 12, "n_eval": 48, "n_prompts": 4, "group": 4, "sft_steps": 20,
        "sft_batch": 32, "proxy_steps": 20, "proxy_batch": 64}


# ---- config --------------------------------------------------------------------------------
def test_fixed_runs_are_named_apart_and_round_trip():
    fresh = RunConfig(pairs=300, beta=0.1, seed=3)
    fixed = RunConfig(pairs=300, beta=0.1, seed=3, eval_every=2, eval_set="fixed")
    assert fresh.run_id == "p300-b0.1-s3"
    assert fixed.run_id == "p300-b0.1-s3-t250-fixed-e2"
    assert RunConfig.for_world("trigram", pairs=1, beta=0, seed=0, eval_set="fixed",
                               eval_every=1).run_id == "trigram-p1-b0-s0-t150-fixed-e1"
    assert RunConfig.from_dict(fixed.to_dict()) == fixed
    # the default leaves saved configs as older runs wrote them (no new key)
    assert "eval_set" not in fresh.to_dict() and fixed.to_dict()["eval_set"] == "fixed"
    assert RunConfig.from_dict(fresh.to_dict()) == fresh


@pytest.mark.parametrize("bad", ["same", "", None, 1])
def test_an_unknown_eval_set_is_a_value_error(bad):
    with pytest.raises(ValueError, match="unknown eval set"):
        RunConfig(pairs=1, beta=0.0, seed=0, eval_set=bad)


def test_dense_grids():
    for world, spec in DENSE.items():
        g = dense_grid(world)
        assert len(g) == len({c.run_id for c in g}) == 24
        assert all(c.eval_set == "fixed" and c.eval_every == 1 and c.world == world for c in g)
        assert min(c.seed for c in g) >= 100  # apart from the fresh-eval corpora's seeds
        assert len({c.seed for c in g}) == 4  # four worlds
        assert [c.steps for c in g] == sorted(c.steps for c in g)
        assert {c.steps for c in g} == {b.steps for b in spec.blocks}
    assert DENSE["bigram"].role == "tuning" and DENSE["trigram"].role == "held-out"
    with pytest.raises(ValueError, match="unknown lab world"):
        dense_spec("quadgram")


# ---- the fixed eval set --------------------------------------------------------------------
@pytest.fixture(scope="module")
def fixed_runs():
    pytest.importorskip("torch")
    from evalstop.lab.run import run_lab

    every1 = run_lab(RunConfig(pairs=50, beta=0.0, seed=1, eval_every=1, eval_set="fixed",
                               **TINY))
    every2 = run_lab(RunConfig(pairs=50, beta=0.0, seed=1, eval_every=2, eval_set="fixed",
                               **TINY))
    fresh = run_lab(RunConfig(pairs=50, beta=0.0, seed=1, eval_every=1, **TINY))
    return every1, every2, fresh


def test_every_second_eval_is_the_run_evaluated_half_as_often(fixed_runs):
    every1, every2, _ = fixed_runs
    assert [r["step"] for r in every2.records] == list(range(0, 13, 2))
    assert ([r["eval"] for r in every1.records][::2]
            == [r["eval"] for r in every2.records])
    assert ([r["proxy"] for r in every1.records][::2]
            == [r["proxy"] for r in every2.records])


def test_the_fixed_set_is_one_set_of_items(fixed_runs):
    every1, _, fresh = fixed_runs
    # training is the same (the eval streams never feed it): identical KL to the reference
    kl1 = [e["kl"] for e in every1.evals]
    assert kl1[0] == pytest.approx(0.0, abs=1e-6)
    # The SFT policy scored twice on fresh items differs; on the fixed set, where only the
    # policy moves the score, consecutive evals differ less than fresh ones do.
    fixed_jitter = np.abs(np.diff([r["eval"] for r in every1.records])).mean()
    fresh_jitter = np.abs(np.diff([r["eval"] for r in fresh.records])).mean()
    assert fixed_jitter < fresh_jitter


def test_fresh_runs_do_not_change(fixed_runs):
    _, _, fresh = fixed_runs
    from evalstop.lab.run import run_lab

    again = run_lab(RunConfig(pairs=50, beta=0.0, seed=1, eval_every=1, eval_set="fresh",
                              **TINY))
    assert again.records == fresh.records and again.meta["config"] == fresh.meta["config"]


# ---- CLI -----------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, message", [
    (["--pairs", "100"], "--dense has its own grid; drop --pairs"),
    (["--steps", "50", "--eval-every", "5"], "drop --steps, --eval-every"),
    (["--world", "nope"], "unknown lab world 'nope'"),
])
def test_dense_with_grid_options_is_one_line_exit_2(extra, message, capsys, tmp_path,
                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(["lab", "corpus", "--dense", "--out", "X", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "X").exists()


def test_run_with_a_fixed_eval_set(capsys, tmp_path):
    pytest.importorskip("torch")
    rc = main(["lab", "run", "--pairs", "50", "--beta", "0", "--seed", "0", "--steps", "6",
               "--eval-every", "1", "--eval-set", "fixed", "--out", str(tmp_path)])
    assert rc == 0
    run_id = "p50-b0-s0-t6-fixed-e1"
    assert capsys.readouterr().out.startswith(run_id + ": ")
    recs = [json.loads(x) for x in (tmp_path / f"{run_id}.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == list(range(7))
    meta = json.loads((tmp_path / f"{run_id}.meta.json").read_text())
    assert meta["config"]["eval_set"] == "fixed"


def test_bad_eval_set_on_the_cli(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["lab", "run", "--pairs", "5", "--beta", "0", "--seed", "0", "--eval-set", "x",
              "--out", "X"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


# ---- the shipped corpora -------------------------------------------------------------------
@pytest.fixture(scope="module", params=list(DENSE))
def shipped(request):
    world = request.param
    return world, *load_dense_corpus(world=world), load_dense_metadata(world=world)


def test_shipped_dense_corpus_shape(shipped):
    world, curves, labels, meta = shipped
    assert list(curves) == [c.run_id for c in dense_grid(world)] == list(labels)
    lengths = [len(c) for c in curves.values()]
    assert 100 <= min(lengths) and max(lengths) <= 1000
    for c in curves.values():
        assert np.array_equal(c.step, np.arange(len(c)))  # an eval at every step
        assert np.all(np.isfinite(c.eval)) and c.progress[-1] == 1.0
    rate = np.mean([lab.hacking for lab in labels.values()])
    assert 0.15 <= rate <= 0.85  # both outcomes, in numbers
    assert meta["provenance"]["role"].startswith(DENSE[world].role)
    assert meta["command"].startswith(f"evalstop lab corpus --dense --world {world}")
    assert set(meta["runs"]) == set(curves)


def test_shipped_labels_follow_the_label_rule(shipped):
    _, curves, labels, _ = shipped
    for run_id, c in curves.items():
        lab = label_curve(c.step, c.eval)
        assert lab.hacking == labels[run_id].hacking
        assert lab.peak_index == labels[run_id].peak_index


def test_no_dense_run_shares_a_name_with_a_fresh_one(shipped):
    world, curves, _, _ = shipped
    fresh, _ = load_corpus(world=world)
    assert not set(curves) & set(fresh)


def test_shipped_dense_files_are_small():
    data = resources.files("evalstop") / "data"
    total = sum(len((data / f).read_bytes()) for spec in DENSE.values() for f in spec.files())
    assert total < 4 * 2**20


def test_a_missing_folder_is_a_one_line_os_error(tmp_path):
    with pytest.raises(OSError, match="cannot read"):
        load_dense_corpus(tmp_path)


def test_the_loader_needs_no_torch():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "from evalstop.lab.dense import load_dense_corpus\n"
            "curves, labels = load_dense_corpus(world='trigram')\n"
            "print(len(curves))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(dense_grid("trigram"))
