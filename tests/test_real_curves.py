"""RLHF curves from the lab corpus in the simulator's workload (rlhf_curves="lab")."""

import numpy as np
import pytest

from evalstop.lab.corpus import RunCurve, load_corpus
from evalstop.lab.labels import label_curve, smooth
from evalstop.workload import synthetic_workload
from evalstop.workload.curves import Curves
from evalstop.workload.real_curves import apply_lab_curves, corpus_arrays, on_grid


def wl(kind, seed=0, **kw):
    return synthetic_workload(np.random.default_rng(seed), n_jobs=80, rlhf_curves=kind, **kw)


def test_rlhf_rows_are_corpus_runs_with_their_labels():
    curves, labels = load_corpus()
    w = wl("lab", eval_interval=0.04)
    rlhf = np.flatnonzero(w.type == "rlhf")
    assert rlhf.size > 0 and len(w.meta["lab_runs"]) == rlhf.size
    assert w.meta["rlhf_curves"] == "lab"
    for row, run_id in zip(rlhf, w.meta["lab_runs"]):
        c, lab = curves[run_id], labels[run_id]
        # on the runs' own grid the evals are the real ones, as evaluated (no noise added)
        np.testing.assert_array_equal(w.eval_obs[row], c.eval[1:])
        np.testing.assert_array_equal(w.proxy[row], c.proxy[1:])
        np.testing.assert_allclose(w.eval_true[row], smooth(c.eval)[1:])
        assert bool(w.hacking[row]) == lab.hacking
        expected_peak = c.progress[lab.peak_index] if lab.hacking else 1.0
        assert w.peak_progress[row] == expected_peak
    w.validate()


def test_everything_but_rlhf_curves_is_the_synthetic_workload():
    a, b = wl("synthetic", seed=3), wl("lab", seed=3)
    other = a.type != "rlhf"
    for f in ("arrival_s", "duration_s", "gpus", "hacking", "est_duration_s"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    np.testing.assert_array_equal(a.eval_obs[other], b.eval_obs[other])
    assert not np.array_equal(a.eval_obs[~other], b.eval_obs[~other])


def test_same_seed_same_workload():
    a, b = wl("lab", seed=5), wl("lab", seed=5)
    np.testing.assert_array_equal(a.eval_obs, b.eval_obs)
    assert a.meta["lab_runs"] == b.meta["lab_runs"]


def test_off_grid_points_are_interpolated():
    prog = np.array([0.0, 0.5, 1.0])
    vals = np.array([[0.0, 1.0, 3.0]])
    np.testing.assert_allclose(on_grid(prog, vals, np.array([0.25, 0.5, 0.75, 1.0])),
                               [[0.5, 1.0, 2.0, 3.0]])


def test_default_grid_works_with_lab_curves():
    w = wl("lab")  # every 0.05: between the runs' 0.04 points
    assert w.n_evals == 20
    w.validate()


def test_bad_choice_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="'gao'"):
        wl("gao")


def test_a_label_missing_from_the_corpus_is_an_error():
    steps = np.arange(0, 50, 10)
    c = RunCurve("ok", steps, np.linspace(0.9, 1.0, 5), np.zeros(5), np.zeros(5), steps / 40)
    corpus = ({"ok": c}, {"ok": label_curve(c.step, c.eval)})
    assert not corpus_arrays(corpus)["hacking"].any()
    grid = np.array([0.25, 0.5, 0.75, 1.0])
    cur = Curves.empty(2, 4)
    cur.hacking[:] = [True, False]
    with pytest.raises(ValueError, match="no hacking runs"):
        apply_lab_curves(cur, np.zeros((2, 4)), np.array(["rlhf", "rlhf"]), grid,
                         np.random.default_rng(0), corpus=corpus)


def test_simulates_with_evalstop():
    from evalstop.metrics.run import run_metrics
    from evalstop.schedulers import build
    from evalstop.sim.engine import simulate

    w = wl("lab", seed=1)
    res = simulate(w, 64, build("srtf-est", "evalstop:k=2"))
    m = run_metrics(w, res)
    assert 0.0 <= m["recall"] <= 1.0 and m["n_stopped"] > 0
