"""The lab's second world (``trigram``): its gold, a deterministic tiny run, the shipped
held-out corpus, unknown world names, and the judge's part built from it."""

import importlib.util
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from evalstop.lab.config import RunConfig
from evalstop.lab.corpus import corpus_files, load_corpus, load_metadata
from evalstop.lab.world_trigram import SEQ_LEN, make_trigram_world
from evalstop.lab.worlds import WORLDS, world_spec

TINY = {"steps": 30, "eval_every": 10, "n_eval": 32, "n_prompts": 4, "group": 4,
        "sft_steps": 20, "sft_batch": 32, "proxy_steps": 20, "proxy_batch": 64}


def test_trigram_gold_pays_for_chain_text_and_variety():
    w = make_trigram_world(3)
    rng = np.random.default_rng(0)
    ref = w.sample(rng, 500)
    assert ref.shape == (500, SEQ_LEN) and np.all(w.fluency(ref) > 0.4)
    # every reference transition is on the chain: fluency strictly above the floor's 0
    assert np.isfinite(w.transition_logp(ref)).all()
    noisy = w.sample(rng, 500, noise=0.3)
    assert w.gold(noisy).mean() < w.gold(ref).mean() - 0.05
    # a repetitive text: one token twelve times, whatever the chain thinks of it
    rep = np.full((1, SEQ_LEN), int(ref[0, 0]))
    assert w.distinct(rep)[0] == 1 and w.gold(rep)[0] < w.gold(ref).mean()
    again = make_trigram_world(3)
    assert np.array_equal(again.trans, w.trans) and not np.array_equal(
        make_trigram_world(4).trans, w.trans)


@pytest.mark.parametrize("bad", ["nope", "", None, "Bigram"])
def test_unknown_world_is_one_line_value_error(bad):
    with pytest.raises(ValueError, match="unknown lab world") as exc:
        RunConfig(pairs=10, beta=0.0, seed=0, world=bad)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="unknown lab world"):
        world_spec(bad)
    with pytest.raises(ValueError, match="unknown lab world"):
        load_corpus(world=bad)


def test_world_settings_and_names():
    tri = RunConfig.for_world("trigram", pairs=10, beta=0.0, seed=2)
    assert tri.proxy_hidden == 0 and (tri.steps, tri.eval_every) == (150, 6)
    assert tri.run_id == "trigram-p10-b0-s2"
    assert RunConfig.for_world("trigram", pairs=10, beta=0.0, seed=2, steps=30).steps == 30
    first = RunConfig.for_world("bigram", pairs=300, beta=0.0, seed=0)
    assert first == RunConfig(pairs=300, beta=0.0, seed=0) and first.run_id == "p300-b0-s0"
    assert RunConfig.from_dict(tri.to_dict()) == tri
    assert corpus_files("trigram") == ("lab2_corpus.jsonl.gz", "lab2_labels.csv",
                                       "lab2_corpus.json")


def test_trigram_run_is_deterministic():
    pytest.importorskip("torch")
    from evalstop.lab.run import run_lab

    cfg = RunConfig.for_world("trigram", pairs=50, beta=0.0, seed=1, **TINY)
    a, b = run_lab(cfg), run_lab(cfg)
    assert a.records == b.records and len(a.records) == 4
    assert [e["kl"] for e in a.meta["evals"]] == [e["kl"] for e in b.meta["evals"]]
    assert a.records[0]["job"] == "trigram-p50-b0-s1"
    assert a.meta["config"]["world"] == "trigram" and a.meta["config"]["proxy_hidden"] == 0
    other = run_lab(RunConfig.for_world("trigram", pairs=50, beta=0.0, seed=2, **TINY))
    assert other.records[1]["eval"] != a.records[1]["eval"]


def test_shipped_held_out_corpus():
    curves, labels = load_corpus(world="trigram")
    spec = WORLDS["trigram"]
    n = len(spec.pairs) * len(spec.betas) * spec.n_seeds
    assert list(curves) == list(labels) and len(curves) == n
    assert all(r.startswith("trigram-p") for r in curves)
    assert {len(c) for c in curves.values()} == {26}  # step 0 and every 6 of 150 steps
    rate = np.mean([lab.hacking for lab in labels.values()])
    assert 0.2 <= rate <= 0.8
    meta = load_metadata(world="trigram")
    assert meta["command"].startswith("evalstop lab corpus --world trigram")
    assert meta["world"] == "trigram" and set(meta["runs"]) == set(curves)
    assert all(m["config"]["world"] == "trigram" for m in meta["runs"].values())
    # the first world's corpus is untouched by the second
    first, _ = load_corpus()
    assert not set(first) & set(curves)
    data = resources.files("evalstop") / "data"
    assert sum(len((data / f).read_bytes()) for f in corpus_files("trigram")) < 2**20


def test_judge_builds_the_held_out_part():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "judge_default.py"
    spec = importlib.util.spec_from_file_location("judge_default", path)
    judge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judge)
    assert judge.TARGETS["lab (held-out world 2)"] == {"harmful_rate": 0.02, "recall": 0.95}
    cell = judge.lab_cell("trigram")
    curves, labels = load_corpus(world="trigram")
    assert cell.runs == len(curves) and cell.hacking.sum() == sum(
        lab.hacking for lab in labels.values())
    assert 0 < cell.sigma < 0.05 and cell.true.shape == cell.eval.shape
    from evalstop.detbench.realshape_score import score

    row = score("evalstop:k=2", [cell], "own")
    assert 0.0 <= row["recall"] <= 1.0 and 0.0 <= row["harmful_rate"] <= 1.0


def test_trigram_corpus_packs_under_its_own_names(tmp_path):
    pytest.importorskip("torch")
    from evalstop.lab.generate import generate, grid, pack

    configs = grid((50,), (0.0,), range(1), world="trigram", **TINY)
    assert configs[0].world == "trigram" and configs[0].proxy_hidden == 0
    generate(configs, tmp_path / "runs", workers=1, progress=False)
    summary = pack(configs, tmp_path / "runs", tmp_path / "packed")
    assert summary["n_runs"] == 1
    assert sorted(p.name for p in (tmp_path / "packed").iterdir()) == sorted(
        corpus_files("trigram"))
    curves, _ = load_corpus(tmp_path / "packed", world="trigram")
    assert list(curves) == ["trigram-p50-b0-s0"]
    assert load_metadata(tmp_path / "packed", world="trigram")["command"] == \
        WORLDS["trigram"].command
    with pytest.raises(ValueError, match="one world"):
        pack([*configs, *grid((50,), (0.0,), range(1), **TINY)], tmp_path / "runs",
             tmp_path / "mixed")


def test_real_corpus_validates_the_held_out_world():
    from evalstop.experiments.real_corpus import validate_shipped

    rows, meta = validate_shipped(["evalstop:k=2"], world="trigram")
    n_hack = sum(lab.hacking for lab in load_corpus(world="trigram")[1].values())
    assert [r["spec"] for r in rows] == ["none", "evalstop:k=2"]
    assert rows[1]["n_runs"] == len(meta["runs"]) and rows[1]["n_hacking"] == n_hack
    assert "harmful_rate" in rows[1]
