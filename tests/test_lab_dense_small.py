"""The small-gain dense-eval corpora: their grids keep tuning and held-out parts apart
from each other and from every other lab corpus, and the shipped files load."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from evalstop.lab.dense import DENSE, dense_grid
from evalstop.lab.dense_small import (
    SMALL,
    load_small_corpus,
    load_small_metadata,
    small_grid,
    small_spec,
)
from evalstop.lab.worlds import WORLDS


def test_grids():
    for part, spec in SMALL.items():
        g = small_grid(part)
        assert len(g) == len({c.run_id for c in g}) == 24
        assert all(c.eval_set == "fixed" and c.eval_every == 1 and c.world == spec.world
                   for c in g)
    assert SMALL["small-tuning"].role == "tuning"
    assert SMALL["small-held-out"].role == "held-out"


def test_parts_share_no_seed_or_length_and_the_held_out_has_pairs_of_its_own():
    tune, held = small_grid("small-tuning"), small_grid("small-held-out")
    for key in ("seed", "steps"):
        assert not {getattr(c, key) for c in tune} & {getattr(c, key) for c in held}, key
    assert len({c.pairs for c in held} - {c.pairs for c in tune}) == 2


def test_no_seed_is_shared_with_another_lab_corpus():
    others = {c.seed for w in DENSE for c in dense_grid(w)}
    others |= set(range(max(w.n_seeds for w in WORLDS.values())))  # fresh-eval corpora
    mine = {c.seed for p in SMALL for c in small_grid(p)}
    assert not mine & others


@pytest.mark.parametrize("bad", ["small", "", None, 3, "trigram"])
def test_an_unknown_part_is_a_one_line_value_error(bad):
    with pytest.raises(ValueError, match="unknown small-gain dense part") as e:
        small_spec(bad)
    assert "\n" not in str(e.value)


@pytest.fixture(scope="module", params=list(SMALL))
def shipped(request):
    part = request.param
    return part, *load_small_corpus(part), load_small_metadata(part)


def test_shipped_corpus_matches_its_grid(shipped):
    part, curves, labels, meta = shipped
    g = small_grid(part)
    assert list(curves) == [c.run_id for c in g] == list(labels)
    for c in g:
        assert len(curves[c.run_id].eval) == c.steps + 1
        assert np.isfinite(curves[c.run_id].eval).all()
    assert meta["provenance"]["role"].startswith(SMALL[part].role)


def test_each_part_has_hacking_and_healthy_runs(shipped):
    _, _, labels, _ = shipped
    hacking = sum(lab.hacking for lab in labels.values())
    assert 0 < hacking < len(labels)


def test_shipped_files_are_small():
    data = resources.files("evalstop") / "data"
    total = sum(len((data / f).read_bytes()) for s in SMALL.values() for f in s.files())
    assert total < 2 * 2**20
