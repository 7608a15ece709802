"""The lab corpus: the shipped files load without torch; generation resumes and packs."""

import json
import subprocess
import sys
from importlib import resources

import pytest

from evalstop.lab.corpus import CORPUS_FILE, LABELS_FILE, META_FILE, load_corpus, load_metadata

NO_TORCH = """
import sys
sys.modules["torch"] = None  # any import of torch now fails
from evalstop.lab.corpus import load_corpus
from evalstop.lab.validate import validate_detectors
curves, labels = load_corpus()
rows = validate_detectors((curves, labels), ["evalstop:k=2"])
held_out, _ = load_corpus(world="trigram")
assert len(held_out) > 0
assert "torch" not in sys.modules or sys.modules["torch"] is None
print(len(curves), sum(lab.hacking for lab in labels.values()), rows[1]["stopped"])
"""


def test_loads_and_validates_without_torch():
    out = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    n, n_hack, stopped = map(int, out.stdout.split())
    assert n >= 120 and 0 < n_hack < n and 0 < stopped <= n


def test_shipped_corpus_spans_both_outcomes():
    curves, labels = load_corpus()
    assert list(curves) == list(labels)
    rate = sum(lab.hacking for lab in labels.values()) / len(labels)
    assert 0.3 <= rate <= 0.7
    lengths = {len(c) for c in curves.values()}
    assert lengths == {26}  # step 0 and every 10 of 250 steps
    meta = load_metadata()
    assert meta["command"].startswith("evalstop lab corpus")
    assert set(meta["runs"]) == set(curves) and "hacking iff" in meta["label_rule"]
    one = next(iter(meta["runs"].values()))
    assert {"config", "seed", "wall_s", "evals"} <= set(one)


def test_shipped_files_are_small():
    data = resources.files("evalstop") / "data"
    total = sum(len((data / f).read_bytes()) for f in (CORPUS_FILE, LABELS_FILE, META_FILE))
    assert total < 5 * 2**20


def test_generate_resumes_and_packs(tmp_path):
    pytest.importorskip("torch")
    from evalstop.lab.generate import generate, grid, pack
    from evalstop.lab.output import paths

    tiny = {"steps": 30, "eval_every": 10, "n_eval": 32, "n_prompts": 4, "group": 4,
            "sft_steps": 10, "sft_batch": 32, "proxy_steps": 10, "proxy_batch": 64}
    configs = grid((50,), (0.0,), range(2), **tiny)
    runs = tmp_path / "runs"
    first = generate(configs[:1], runs, workers=1, progress=False)
    assert first["ran"] == 1
    # an interrupted run leaves no metadata file: it is redone, the complete one is not
    paths(runs, configs[1].run_id)["log"].write_text("partial")
    again = generate(configs, runs, workers=1, progress=False)
    assert (again["ran"], again["skipped"]) == (1, 1)
    summary = pack(configs, runs, tmp_path / "packed", command="test")
    assert summary["n_runs"] == 2
    curves, labels = load_corpus(tmp_path / "packed")
    assert list(curves) == [c.run_id for c in configs] and set(labels) == set(curves)
    doc = json.loads((tmp_path / "packed" / META_FILE).read_text())
    assert doc["command"] == "test" and doc["summary"]["n_runs"] == 2
    # packing the same runs again gives the same compressed bytes
    first_bytes = (tmp_path / "packed" / CORPUS_FILE).read_bytes()
    pack(configs, runs, tmp_path / "packed", command="test")
    assert (tmp_path / "packed" / CORPUS_FILE).read_bytes() == first_bytes


def test_pack_refuses_incomplete_runs(tmp_path):
    from evalstop.lab.generate import grid, pack

    with pytest.raises(ValueError, match="not complete"):
        pack(grid((50,), (0.0,), range(1)), tmp_path, tmp_path / "packed")
