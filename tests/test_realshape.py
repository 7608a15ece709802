"""Issue 11's real-shaped material and its scoring."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evalstop.detbench import realshape
from evalstop.detbench.realshape_score import cell_spec, run_cell, score


def test_synthetic_parts_are_deterministic_and_disjoint():
    a = realshape.synthetic(0, 2, held_out=False, eval_counts=(8,), sigmas=(0.04,))
    b = realshape.synthetic(0, 2, held_out=False, eval_counts=(8,), sigmas=(0.04,))
    h = realshape.synthetic(0, 2, held_out=True, eval_counts=(8,), sigmas=(0.04,))
    assert all(np.array_equal(x.eval, y.eval) for x, y in zip(a, b))
    assert {c.family for c in a}.isdisjoint({c.family for c in h})
    assert {"collapse", "dip-recover", "flat"} <= {c.family for c in a}
    assert {"cliff", "double-dip", "flat-creep"} <= {c.family for c in h}


def test_pass_rate_cells_are_proportions_over_n_items():
    cells = realshape.synthetic(1, 4, held_out=False, eval_counts=(12,), sigmas=(0.04,))
    rates = [c for c in cells if c.noise == "binomial"]
    assert {c.items for c in rates} == set(realshape.ITEMS)
    for c in rates:
        assert np.all((c.eval >= 0) & (c.eval <= 1))
        assert np.allclose(c.eval * c.items, np.round(c.eval * c.items))


def test_short_part_drops_are_sustained_and_at_least_4_sigmas():
    for held in (False, True):
        for c in realshape.short_cells(0, 40, held_out=held):
            assert 6 <= c.evals <= 12
            for i in range(c.runs):
                d = c.drop_idx[i]
                if d < 0:
                    assert np.ptp(c.true[i]) == 0 and not c.hacking[i]
                    continue
                assert c.hacking[i] and 3 <= d <= c.evals - 3
                level = c.true[i, d - 1]
                sig = np.sqrt(level * (1 - level) / c.items)
                # 4 sigmas, or down to a rate of 0 where the level is lower than that
                bar = max(level - 4 * sig, 0.0)
                assert np.all(c.true[i, d + 1:] <= bar + 1e-12)


def test_stated_mode_gives_eval_n_or_sigma_and_leaves_other_rules_alone():
    syn = realshape.synthetic(0, 2, held_out=False, eval_counts=(8,), sigmas=(0.04,))
    add = next(c for c in syn if c.noise == "gauss")
    rate = next(c for c in syn if c.noise == "binomial")
    assert cell_spec("default", rate, "stated") == f"default:eval_n={rate.items}"
    assert cell_spec("cusum-drop:h=2", add, "stated") == "cusum-drop:h=2,sigma=0.04"
    assert cell_spec("evalstop:k=2", add, "stated") == "evalstop:k=2"
    with pytest.raises(ValueError, match="unknown noise mode"):
        cell_spec("default", add, "psychic")


def test_score_counts_short_drops_within_3_evals_and_flat_stops():
    cells = realshape.short_cells(0, 20, held_out=False, eval_counts=(8,), items=(1000,))
    stopped, stop_idx, _ = run_cell("evalstop:k=1", cells[0], "own")
    m = score("evalstop:k=1", cells, "own")
    d = cells[0].drop_idx
    assert m["recall_within3"] == pytest.approx(
        ((d >= 0) & stopped & (stop_idx <= d + 2)).sum() / (d >= 0).sum())
    assert m["flat_stopped"] == pytest.approx(((d < 0) & stopped).sum() / (d < 0).sum())
    assert m["flat_stopped"] > 0.5  # k=1 stops nearly every noisy flat run
    assert 0.0 <= m["tenant_harmful_rate"] <= m["fpr"]  # only false stops can harm


def _short_pin(cells):
    m = hashlib.sha256()
    for c in cells:
        m.update(np.round(c.eval * c.items).astype(np.int64).tobytes())
        m.update(c.drop_idx.astype(np.int64).tobytes())
    return m.hexdigest()


def test_held_out_short_part_is_the_material_issue_11_was_judged_on():
    # Round 3 changed only the tuning short part; seeds 0 and 1 were judged on these draws
    # (pinned from the code before that change; numpy 2.4's PCG64 and binomial streams).
    pins = {0: "26d5c6fe23ffbf972eea04cb62189e8ea07cb0b700f10da78bb64103b8257158",
            1: "c08cb70cc2add00723ba00b7320d189b1138e92544a95704341de72310421a70"}
    for seed, pin in pins.items():
        assert _short_pin(realshape.short_cells(seed, 50, held_out=True)) == pin


def test_tuning_short_part_has_two_eval_falls_and_rising_starts_like_held_out():
    for held in (False, True):
        two_eval = rising = drops = 0
        for c in realshape.short_cells(0, 40, held_out=held):
            for i in np.flatnonzero(c.drop_idx >= 0):
                d = c.drop_idx[i]
                drops += 1
                # halfway down at the drop's first eval (unless clipped at a rate of 0)
                two_eval += bool(c.true[i, d + 1] < c.true[i, d] < c.true[i, d - 1])
                rising += bool(c.true[i, 0] < c.true[i, d - 1])
        assert 0.35 < two_eval / drops < 0.6 and 0.35 < rising / drops < 0.6, (held, two_eval,
                                                                             rising, drops)
