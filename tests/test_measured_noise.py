"""The eval's noise measured from several jobs (``detectors.measured_noise``), its CLI
(``evalstop noise``) and its use in the detector benchmark (``detbench.calibration``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evalstop.cli.main import main
from evalstop.detbench import calibration
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.families import FAMILIES
from evalstop.detbench.lineup import LINEUP
from evalstop.detectors import make_detector
from evalstop.detectors.measured_noise import (
    MIN_POOLED_DIFFS,
    _diff_scale_np,
    measure_noise,
)
from evalstop.detectors.noise import diff_scale


def _jobs(rng, n_jobs, sigma, evals=20):
    """Rising-then-flat curves (different shapes) plus Gaussian noise of ``sigma``."""
    p = np.arange(1, evals + 1) / evals
    return [np.minimum(p * rng.uniform(1, 3), 1.0) + sigma * rng.standard_normal(evals)
            for _ in range(n_jobs)]


@pytest.mark.parametrize("sigma", [0.02, 0.05, 0.1])
def test_pooled_estimate_is_close_to_the_noise(sigma):
    m = measure_noise(_jobs(np.random.default_rng(1), 200, sigma))
    assert m.n_jobs == 200 and m.n_diffs == 200 * 18
    assert m.sigma == pytest.approx(sigma, rel=0.12)  # kinks of the curves read a little high
    one_job = [measure_noise([s]).sigma for s in _jobs(np.random.default_rng(2), 200, sigma)]
    # pooling is the point: one job's 18 second differences scatter by about a quarter
    assert np.std(one_job) / sigma > 0.15


def test_nan_evals_are_skipped_like_the_detectors_skip_them():
    jobs = _jobs(np.random.default_rng(3), 5, 0.05)
    holed = [np.insert(j, 4, np.nan) for j in jobs]
    assert measure_noise(holed).sigma == measure_noise(jobs).sigma


def test_too_few_evals_is_a_clear_error():
    with pytest.raises(ValueError, match="too few evals to measure the noise: 9 second"):
        measure_noise([[0.1] * 11])  # 11 evals -> 9 second differences
    assert measure_noise([[0.1, 0.2, 0.1] * 4]).n_diffs == MIN_POOLED_DIFFS
    with pytest.raises(ValueError, match="0 second differences from 0 job"):
        measure_noise([[0.1, 0.2], [math.nan] * 30])


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    jobs = _jobs(np.random.default_rng(4), 40, 0.05)
    a = measure_noise(jobs, rng=np.random.default_rng(0), n_boot=200)
    b = measure_noise(jobs, rng=np.random.default_rng(0), n_boot=200)
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.lo < a.sigma < a.hi
    plain = measure_noise(jobs)
    assert plain.sigma == a.sigma and math.isnan(plain.lo) and math.isnan(plain.hi)
    single = measure_noise(jobs[:1], rng=np.random.default_rng(0))
    assert math.isnan(single.lo)  # one job cannot be resampled


@pytest.mark.parametrize("values", [
    np.random.default_rng(5).standard_normal(501),
    np.round(np.random.default_rng(6).standard_normal(300) * 2) / 2,  # quantised
    np.r_[np.zeros(50), 1.0, -2.0],  # MAD 0: the unclipped branch
])
def test_vectorised_scale_matches_the_online_one(values):
    assert _diff_scale_np(values) == pytest.approx(diff_scale(list(values)), rel=1e-12)


# --- the CLI -------------------------------------------------------------------------------

def _log(path, jobs, prefix="job"):
    with path.open("w") as fh:
        for i, series in enumerate(jobs):
            for step, v in enumerate(series):
                fh.write(json.dumps({"job": f"{prefix}{i}", "step": step,
                                     "eval": None if math.isnan(v) else float(v)}) + "\n")
    return path


def test_cli_prints_the_sigma_and_a_spec_that_runs(tmp_path, capsys):
    log = _log(tmp_path / "log.jsonl", _jobs(np.random.default_rng(7), 30, 0.04))
    assert main(["noise", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("eval noise sigma: ") and "90% interval" in out
    assert "from 540 second differences of 30 job(s)" in out
    spec = out.rsplit("--detector ", 1)[1].strip()
    assert spec.startswith("default:sigma=")  # the recommended rule, as README shows
    sigma = make_detector(spec).sigma
    assert sigma == pytest.approx(0.04, rel=0.15)


def test_cli_json_and_job_filter(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    _log(log, _jobs(np.random.default_rng(8), 10, 0.02), prefix="quiet")
    with log.open("a") as fh:  # a second eval suite, much noisier, in the same log
        for i, series in enumerate(_jobs(np.random.default_rng(9), 10, 0.2)):
            for step, v in enumerate(series):
                fh.write(json.dumps({"job": f"loud{i}", "step": step, "eval": v}) + "\n")
    assert main(["noise", str(log), "--json", "--jobs", "^quiet"]) == 0
    quiet = json.loads(capsys.readouterr().out)
    assert quiet["jobs"] == 10 and quiet["sigma"] == pytest.approx(0.02, rel=0.25)
    assert quiet["lo"] < quiet["sigma"] < quiet["hi"] and len(quiet["per_job_p10_p50_p90"]) == 3
    assert main(["noise", str(log), "--json", "--jobs", "loud"]) == 0
    assert json.loads(capsys.readouterr().out)["sigma"] > 5 * quiet["sigma"]


@pytest.mark.parametrize("args, lines, message", [
    (["--jobs", "("], None, "--jobs '(' is not a regular expression"),
    (["--jobs", "nobody"], None, "no job in"),
    ([], ['{"job": "a", "step": 1, "eval": 0.5}'], "too few evals to measure the noise"),
    ([], ['{"job": "a", "step": 1, "eval": 0.5}', "{oops"], ":2: not valid JSON"),
    ([], ['{"job": "a", "step": 1}'], "missing 'eval'"),
    (["--seed", "-1"], None, "--seed must be >= 0, got -1"),
    ([], [json.dumps({"job": "a", "step": i, "eval": (-1) ** i * 1.5e308}) for i in range(14)],
     "second differences overflow"),
])
def test_cli_bad_input_is_one_line(tmp_path, capsys, args, lines, message):
    log = tmp_path / "log.jsonl"
    if lines is None:
        _log(log, _jobs(np.random.default_rng(10), 3, 0.05))
    else:
        log.write_text("\n".join(lines) + "\n")
    assert main(["noise", str(log), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_missing_file(tmp_path, capsys):
    assert main(["noise", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl" in capsys.readouterr().err


# --- in the detector benchmark ---------------------------------------------------------------

def test_calibration_uses_tuning_families_only_and_its_own_streams(monkeypatch):
    drawn = []
    real = runs_mod.make_runs

    def spy(fam, *a, **k):
        drawn.append(fam)
        return real(fam, *a, **k)

    monkeypatch.setattr(runs_mod, "make_runs", spy)
    a = calibration.measured_sigma(0, (1, 2), 0.05, "gauss", 10)
    assert len(drawn) == 10 and all(not f.held_out for f in drawn)
    assert a == calibration.measured_sigma(0, (1, 2), 0.05, "gauss", 10)  # seeded
    assert a != calibration.measured_sigma(0, (1, 3), 0.05, "gauss", 10)  # per cell
    assert a != calibration.measured_sigma(1, (1, 2), 0.05, "gauss", 10)  # per seed
    assert len({f.name for f in drawn}) > 1
    assert any(f.held_out for f in FAMILIES)  # the check above is not vacuous


def test_calibrated_spec_is_the_known_rule_told_the_measurement():
    known = calibration.known_candidate(LINEUP)
    assert known.label.startswith("cusum-known")
    spec = calibration.spec(known, 0.0345)
    assert make_detector(spec).sigma == 0.0345 and "{sigma}" not in spec
    assert calibration.known_candidate(LINEUP[:1]) is None


def test_real_corpus_runs_cusum_known_with_the_noise_measured_from_its_logs(tmp_path):
    from evalstop.experiments.real_corpus import validate_shipped
    from evalstop.lab.corpus import load_corpus

    rows, _ = validate_shipped()
    curves, _ = load_corpus()
    known = rows[-1]
    sigma = measure_noise([c.eval for c in curves.values()]).sigma
    assert known["spec"] == f"cusum-known:sigma={sigma:.4g}"
    assert 0.0 < known["recall"] <= 1.0 and known["stopped"] > 0


@pytest.mark.parametrize("series", [[0.5] * 20, [0.1 * i for i in range(20)]])
def test_cli_refuses_to_suggest_a_zero_sigma(tmp_path, capsys, series):
    log = _log(tmp_path / "flat.jsonl", [series, series])
    assert main(["noise", str(log)]) == 2
    err = capsys.readouterr().err
    assert "the evals show no noise" in err and err.count("\n") == 1
