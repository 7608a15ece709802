"""The fitted workload (issue 44): its fit, its held-out part, and its goodness of fit."""

import json

import numpy as np
import pytest

from evalstop.workload import fit as fitmod
from evalstop.workload.fit_check import fitted_table, paper_table, rows
from evalstop.workload.fitted_curves import correlated_noise, fitted_runs
from evalstop.workload.shape_stats import run_stats, table
from evalstop.workload.synthetic import synthetic_workload

N_RUNS = 1500  # generated runs per check: the medians move by a few percent between seeds


@pytest.fixture(scope="module")
def shipped():
    return fitmod.shipped_runs()


@pytest.fixture(scope="module")
def held_table(shipped):
    _, held = fitmod.split(shipped)
    return table(fitmod.measure(held), [r.hacking for r in held])


def test_split_is_deterministic_disjoint_and_a_third(shipped):
    fit_part, held = fitmod.split(shipped)
    again = fitmod.split(fitmod.shipped_runs())
    assert [r.key for r in held] == [r.key for r in again[1]]
    assert not {r.key for r in fit_part} & {r.key for r in held}
    assert len(fit_part) + len(held) == len(shipped)
    assert 0.25 < len(held) / len(shipped) < 0.42


def test_shipped_fit_is_what_the_fit_script_writes(shipped):
    """The preset reads the shipped JSON: it must be the fit of the fit part, no more."""
    shipped_fit = fitmod.load_fit()
    fresh = fitmod.fit(shipped)
    assert shipped_fit["runs"] == json.loads(json.dumps(fresh["runs"]))
    assert shipped_fit["hacking_share"] == fresh["hacking_share"]
    fit_part, _ = fitmod.split(shipped)
    assert sum(len(v) for v in shipped_fit["runs"].values()) == len(fit_part)


@pytest.mark.parametrize("seed", [0, 1])
def test_fitted_generator_sits_within_the_held_out_bands(held_table, seed):
    generated = fitted_table(np.random.default_rng(seed), N_RUNS)
    out = rows(held_table, generated)
    assert len(out) == 9
    bad = [(r["statistic"], r["generated_median"], r["band"]) for r in out if not r["in_band"]]
    assert not bad, bad


def test_the_paper_preset_falls_outside_the_bands(held_table):
    """The check can fail: the paper's curves peak late and barely fall."""
    out = {r["statistic"]: r for r in rows(held_table, paper_table(np.random.default_rng(0),
                                                                      N_RUNS))}
    for name in ("hacking/peak_at", "hacking/fall_share", "hacking/fall_speed",
                 "healthy/late_slope"):
        assert out[name]["in_band"] is False, name


def test_a_drifted_fit_falls_outside_the_bands(held_table):
    """Moving every hacking run's peak late (as the paper's) is caught."""
    drifted = fitmod.load_fit()
    drifted = {**drifted, "runs": {**drifted["runs"], "hacking": [
        {**r, "peak_at": 0.65} for r in drifted["runs"]["hacking"]]}}
    out = {r["statistic"]: r for r in rows(held_table, fitted_table(
        np.random.default_rng(0), N_RUNS, drifted))}
    assert out["hacking/peak_at"]["in_band"] is False


def test_a_tuner_can_leave_out_the_corpora_that_judge_stop_rules():
    fit = fitmod.load_fit()
    corpora = {r["corpus"] for c in fitmod.CLASSES for r in fit["runs"][c]}
    assert set(fitmod.JUDGING_CORPORA) <= corpora  # the fit part mixes every corpus
    kept = fitmod.without_corpora(fit)
    left = {r["corpus"] for c in fitmod.CLASSES for r in kept["runs"][c]}
    assert left and not left & set(fitmod.JUDGING_CORPORA)
    assert fitted_runs(np.random.default_rng(0), 20, kept)  # still a generator
    with pytest.raises(ValueError, match="leaves"):
        fitmod.without_corpora(fit, sorted(corpora))


def test_fixed_set_noise_is_correlated_and_fresh_noise_is_not():
    z = np.random.default_rng(3).standard_normal((2, 4000))
    grid = np.arange(1, 4001) / 4000
    x = correlated_noise(z, grid, np.array([0.5, 0.5]), np.array([0.0, 3.0 / 4000]))
    lag1 = [np.corrcoef(r[:-1], r[1:])[0, 1] for r in x]
    assert abs(lag1[0]) < 0.05
    assert lag1[1] == pytest.approx(np.exp(-1 / 36), abs=0.03)  # exp(-d^2 / (4 ell^2))
    assert np.std(x, axis=1) == pytest.approx([0.5, 0.5], rel=0.1)


def test_fitted_workload_uses_the_fit_and_keeps_labels_consistent():
    w = synthetic_workload(np.random.default_rng(5), preset="fitted", n_jobs=400)
    rlhf = w.type == "rlhf"
    assert w.meta["preset"] == "fitted"
    h = w.hacking
    assert not h[~rlhf].any()
    # Hacking runs peak early (the real runs' median is under a quarter of the run) and
    # fall by at least the workload's least drop; healthy runs waste nothing.
    assert np.median(w.peak_progress[h]) < 0.3
    assert np.all(w.eval_true[h].max(axis=1) - w.eval_true[h, -1] >= 0.01 - 1e-12)
    assert np.all(w.peak_progress[~h] == 1.0)


def test_paper_preset_noise_stays_white_at_sigma():
    """Only rows with their own noise take the correlated path: the paper preset's is white."""
    w = synthetic_workload(np.random.default_rng(9), preset="paper", n_jobs=200)
    noise = w.eval_obs - w.eval_true
    assert np.std(noise) == pytest.approx(0.02, rel=0.05)
    lag1 = np.corrcoef(noise[:, :-1].ravel(), noise[:, 1:].ravel())[0, 1]
    assert abs(lag1) < 0.05


def test_fitted_rlhf_jobs_carry_their_own_noise_and_others_sigma():
    w = synthetic_workload(np.random.default_rng(9), preset="fitted", n_jobs=300, sigma=0.05)
    noise = w.eval_obs - w.eval_true
    other = w.type != "rlhf"
    assert np.std(noise[other]) == pytest.approx(0.05, rel=0.1)
    assert np.std(noise[~other]) < 0.04  # the fitted noise, whatever sigma says


def test_snr_knobs_are_refused_on_fitted_curves():
    with pytest.raises(ValueError, match="fitted to measured runs"):
        synthetic_workload(np.random.default_rng(0), preset="fitted", n_jobs=10, late_snr=1.0)


def test_generated_runs_have_their_fit_runs_eval_counts():
    fit = fitmod.load_fit()
    counts = {r["n_evals"] for c in fitmod.CLASSES for r in fit["runs"][c]}
    runs = fitted_runs(np.random.default_rng(0), 50)
    assert {len(p) for p, _, _ in runs} <= counts


def test_run_stats_refuses_a_short_or_broken_run():
    with pytest.raises(ValueError, match="at least"):
        run_stats([0.0, 0.5, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        run_stats(np.linspace(0, 1, 10), [1.0] * 9 + [float("nan")])


def test_run_stats_of_a_known_curve():
    p = np.linspace(0, 1, 101)
    curve = np.where(p <= 0.2, p / 0.2, 1.0 - 2.0 * (p - 0.2))  # gain 1, falls 1.6 after 0.2
    noise = 0.01 * np.random.default_rng(0).standard_normal(p.size)
    s = run_stats(p, curve + noise)
    assert s["peak_at"] == pytest.approx(0.2, abs=0.03)
    assert s["fall_share"] == pytest.approx(1.6, rel=0.05)
    assert s["noise"] == pytest.approx(0.01, rel=0.35)


def test_log_runs_label_a_platforms_own_logs(tmp_path):
    logs = tmp_path / "logs" / "acme"
    logs.mkdir(parents=True)
    lines = []
    for step in range(30):
        rise = 0.5 + 0.02 * step
        lines.append({"job": "hacked", "step": step,
                      "eval": rise if step < 10 else 0.7 - 0.03 * (step - 10)})
        lines.append({"job": "fine", "step": step, "eval": rise if step < 10 else 0.7})
    lines.append({"job": "short", "step": 0, "eval": 0.5})
    (logs / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    runs, skipped = fitmod.log_runs(tmp_path / "logs")
    by = {r.run_id: r for r in runs}
    assert by["hacked"].hacking and not by["fine"].hacking
    assert by["hacked"].corpus == "acme/runs.jsonl"
    assert by["hacked"].progress[-1] == 1.0
    assert len(skipped) == 1 and "short" in skipped[0]


def test_log_runs_refuse_a_folder_without_logs(tmp_path):
    with pytest.raises(ValueError, match="no eval log"):
        fitmod.log_runs(tmp_path)
    with pytest.raises(ValueError, match="not a folder"):
        fitmod.log_runs(tmp_path / "missing")


def test_load_fit_refuses_a_file_that_is_not_a_fit(tmp_path):
    bad = tmp_path / "fit.json"
    bad.write_text('{"runs": {}}')
    with pytest.raises(ValueError, match="not a workload fit"):
        fitmod.load_fit(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        fitmod.load_fit(bad)
