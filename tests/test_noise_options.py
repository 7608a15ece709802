"""Issue 11: stated noise (sigma=, eval_n=), the fleet prior, their precedence, and the
default on short runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.detectors import DEFAULT_SPEC, FleetNoise, make_detector
from evalstop.detectors.registry import canonical, detector_factory, reads_noise
from evalstop.detectors.stated_noise import binomial_sigma

NOISE_RULES = ("default", "cusum-drop", "noise-drop", "slope")


def stops(spec, values, **kw):
    det = make_detector(spec, **kw)
    for i, v in enumerate(values):
        if det.update(i + 1, v).stop:
            return i + 1
    return None


# ---- spec parsing ---------------------------------------------------------------------
@pytest.mark.parametrize("rule", NOISE_RULES)
def test_noise_options_parse_and_round_trip(rule):
    for opt in ("eval_n=100", "sigma=0.02"):
        det = make_detector(f"{rule}:{opt}")
        assert opt.split("=")[0] + "=" in det.spec
        assert canonical(det.spec) == det.spec
    assert "sigma" not in canonical(rule) and "eval_n" not in canonical(rule)


@pytest.mark.parametrize("spec, word", [
    ("default:eval_n=0", "eval_n must"), ("default:eval_n=-5", "eval_n must"),
    ("default:eval_n=1.5", "not an int"), ("default:eval_n=abc", "not an int"),
    ("default:sigma=0", "sigma must"), ("default:sigma=-1", "sigma must"),
    ("default:sigma=nan", "sigma must"), ("default:sigma=inf", "sigma must"),
    ("default:sigma=0.1,eval_n=100", "not both"), ("noise-drop:eval_n=0", "eval_n must"),
    ("slope:sigma=-0.1", "sigma must"), ("cusum-known:sigma=0.1,eval_n=10", "not both"),
    ("evalstop:k=2,sigma=0.1", "unknown key"),
])
def test_bad_noise_options_are_one_line_value_errors(spec, word):
    with pytest.raises(ValueError, match=word) as err:
        make_detector(spec)
    assert "\n" not in str(err.value)


def test_eval_n_refuses_scores_outside_0_1_before_any_state_changes():
    det = make_detector("default:eval_n=100")
    det.update(1, 0.5)
    before = json.dumps(det.state_dict())
    with pytest.raises(ValueError, match=r"proportions in \[0, 1\]"):
        det.update(2, 57.0)  # a percentage
    assert json.dumps(det.state_dict()) == before
    det.update(2, 0.6)  # the step was not used up


def test_eval_n_in_min_mode_reads_the_score_not_its_negation():
    det = make_detector("default:eval_n=100", mode="min")
    for i, v in enumerate([0.5, 0.4, 0.3]):
        det.update(i + 1, v)  # error rates in [0, 1] are fine


def test_binomial_sigma_follows_the_level_and_stays_positive_at_0_and_1():
    assert binomial_sigma(0.5, 100) == pytest.approx(0.05)
    assert binomial_sigma(0.1, 100) < binomial_sigma(0.5, 100)
    assert binomial_sigma(0.0, 100) > 0 and binomial_sigma(1.0, 100) > 0
    assert binomial_sigma(0.0, 100) == pytest.approx(binomial_sigma(1.0, 100))


# ---- short runs: tables with the expected stop step -----------------------------------
FLAT = [0.5] * 5
SHORT_TABLE = [
    # (values, spec, expected stop step): eval_n=100 at 0.5 gives sigma 0.05.
    (FLAT + [0.2, 0.2, 0.2], "default:eval_n=100", 7),  # 6 sigmas, clip 3: +1.5 per eval, h=2.5
    (FLAT + [0.2, 0.2, 0.2, 0.2], "default:eval_n=100", 7),
    (FLAT + [0.2], "default:eval_n=100", None),  # one eval adds only 1.5: never stops alone
    (FLAT + [0.2, 0.5, 0.2, 0.5], "default:eval_n=100", None),  # not sustained
    (FLAT + [0.4] * 4, "default:eval_n=100", None),  # 2 sigmas: +0.5 per eval, 2.0 < h
    (FLAT + [0.5] * 7, "default:eval_n=100", None),  # flat
    ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "default:eval_n=100", None),  # rising
    ([0.5, 0.5, 0.5, 0.3, 0.3, 0.3], "default:eval_n=100", 5),  # 6 evals, 4 sigmas
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.4], "default:sigma=0.025", 8),
    (FLAT + [0.2, 0.2, 0.2], "evalstop:k=2", None),  # equal evals are no decline
]


@pytest.mark.parametrize("values, spec, expected", SHORT_TABLE)
def test_short_run_table(values, spec, expected):
    assert stops(spec, values) == expected


def test_short_run_needs_a_stated_noise_to_stop_this_early():
    """With nothing stated the job's own estimate needs 5 evals and is widened: the same
    4-sigma drop in a noisy 8-eval run is stopped later or not at all."""
    rng = np.random.default_rng(3)
    late = 0
    for _ in range(20):
        vals = np.r_[np.full(4, 0.5), np.full(4, 0.3)] + rng.normal(0, 0.05, 8)
        vals = np.clip(vals, 0, 1).tolist()
        s_known, s_own = stops("default:eval_n=100", vals), stops("default", vals)
        late += s_own is None or (s_known is not None and s_own > s_known)
    assert late >= 10


# ---- properties -----------------------------------------------------------------------
rises = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=40).map(sorted)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(rises, st.sampled_from(["default", "default:eval_n=30", "default:sigma=0.01",
                               "noise-drop:eval_n=100", "cusum-drop:sigma=0.05"]))
def test_a_run_that_only_rises_is_never_stopped(values, spec):
    assert stops(spec, values) is None


values_st = st.lists(st.floats(-10.0, 10.0, allow_nan=False), min_size=3, max_size=30)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(values_st, st.integers(-6, 6), st.sampled_from(["default", "cusum-drop", "noise-drop"]))
def test_scaling_scores_and_sigma_alike_keeps_the_decision(values, e, rule):
    """A power-of-two scale is exact in floating point, so decisions must match exactly."""
    c = 2.0 ** e
    assert stops(f"{rule}:sigma=0.5", values) == stops(f"{rule}:sigma={0.5 * c!r}",
                                                       [v * c for v in values])
    assert stops(rule, values) == stops(rule, [v * c for v in values])


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=3, max_size=30), st.integers(-500, 500),
       st.sampled_from(["default:sigma=2.0", "default", "noise-drop:sigma=1.5"]))
def test_adding_a_constant_keeps_the_decision(ints, shift, spec):
    values = [float(v) for v in ints]
    assert stops(spec, values) == stops(spec, [v + shift for v in values])


# ---- the fleet prior ------------------------------------------------------------------
def test_fleet_pools_the_noise_of_many_jobs():
    rng = np.random.default_rng(0)
    fleet = FleetNoise()
    assert fleet.sigma() is None
    dets = [make_detector("default", fleet=fleet) for _ in range(30)]
    last = [10] * 30  # the eval at which a job stopped (a false stop on flat noise)
    for j in range(10):
        for i, det in enumerate(dets):
            if det.update(j + 1, 0.5 + 0.03 * rng.standard_normal()).stop:
                last[i] = min(last[i], j + 1)
    # each job adds one second difference from its 3rd eval up to the eval it stopped at
    assert fleet.count == sum(n - 2 for n in last) and fleet.count >= 30 * 8 - 10
    assert fleet.sigma() == pytest.approx(0.03, rel=0.15)


def test_fleet_state_survives_a_json_round_trip_and_restarts_do_not_double_count():
    rng = np.random.default_rng(1)
    fleet = FleetNoise(name="mmlu")
    for d in rng.normal(0, 0.1, 57):
        fleet.add(d)
    twin = FleetNoise.from_state(json.loads(json.dumps(fleet.state_dict())))
    assert twin.sigma() == fleet.sigma() and twin.count == fleet.count and twin.name == "mmlu"
    for d in rng.normal(0, 0.1, 20):
        fleet.add(d)
        twin.add(d)
    assert twin.sigma() == fleet.sigma()
    # a detector restored from its state does not feed the fleet its old evals again
    f1 = FleetNoise()
    det = make_detector("default", fleet=f1)
    for i in range(6):
        det.update(i + 1, 0.1 * i % 0.3)
    n = f1.count
    det2 = make_detector("default", fleet=f1)
    det2.load_state_dict(json.loads(json.dumps(det.state_dict())))
    det2.update(7, 0.2)
    assert f1.count == n + 1


@pytest.mark.parametrize("state", [
    {}, {"kind": "x"}, {"kind": "fleet-noise", "min_count": 30, "warm": [], "scale": -1,
                        "n": 0, "sum": 0}, "nonsense",
])
def test_bad_fleet_state_is_a_one_line_value_error(state):
    with pytest.raises(ValueError, match="bad FleetNoise state"):
        FleetNoise().load_state_dict(state)


def test_precedence_stated_over_fleet_over_own():
    fleet = FleetNoise()
    for d in [0.5, -0.5] * 30:
        fleet.add(d)
    # cusum-drop's own parts (block-cusum's: tests/test_detector_block_cusum.py)
    own = make_detector("cusum-default")
    with_fleet = make_detector("cusum-default", fleet=fleet)
    stated = make_detector("cusum-default:sigma=0.01", fleet=fleet)
    vals = [0.5, 0.52, 0.49, 0.51, 0.5, 0.48]
    for i, v in enumerate(vals):
        for det in (own, with_fleet, stated):
            det.update(i + 1, v)
    assert stated._sigma(stated._values) == 0.01
    assert with_fleet._sigma(with_fleet._values) == pytest.approx(fleet.sigma())
    assert own._sigma(own._values) not in (0.01, pytest.approx(fleet.sigma()))


def test_fleet_is_refused_by_rules_that_read_no_noise_and_shared_by_a_factory():
    with pytest.raises(ValueError, match="does not read the eval noise"):
        make_detector("evalstop:k=2", fleet=FleetNoise())
    assert reads_noise("default") and not reads_noise("evalstop:k=2")
    fleet = FleetNoise()
    make = detector_factory("default", fleet=fleet)
    a, b = make(), make()
    assert a.fleet is fleet and b.fleet is fleet and a is not b


def test_the_default_is_the_new_rule_everywhere(tmp_path):
    """replay names the alias, the simulator the spec, and a watch run with no --detector
    keeps its jobs' state under the default spec."""
    import inspect
    import json

    from evalstop.cli import replay
    from evalstop.cli.main import main
    from evalstop.integrations.watch import StateStore
    from evalstop.schedulers.overlay import EvalStop

    assert canonical("default") == DEFAULT_SPEC and "smooth_min=3" in DEFAULT_SPEC
    assert canonical(inspect.signature(EvalStop.__init__).parameters["detector"].default) \
        == DEFAULT_SPEC
    assert "default=\"default\"" in inspect.getsource(replay).replace(" ", "")
    (tmp_path / "logs" / "t").mkdir(parents=True)
    (tmp_path / "logs" / "t" / "a.jsonl").write_text(
        json.dumps({"job": "j", "step": 1, "eval": 0.5}) + "\n")
    db = str(tmp_path / "s.db")
    assert main(["watch", "--jsonl", str(tmp_path / "logs"), "--db", db, "--once"]) == 0
    (row,) = StateStore(db, readonly=True).jobs().values()
    assert row.detector["spec"] == DEFAULT_SPEC


# ---- wiring: simulator, Tune, callback ------------------------------------------------
def test_simulator_overlay_hands_one_fleet_per_job_type():
    from evalstop.schedulers.base import Scheduler
    from evalstop.schedulers.overlay import EvalStop

    class Base(Scheduler):
        name = "base"

    class Job:
        def __init__(self, index, type_):
            self.index, self.type = index, type_
            self.steps, self.evals, self.losses, self.proxies = [], [], [], []
            self.progress = 0.0

    ov = EvalStop(Base(), "default", fleet=True)
    jobs = [Job(i, "rlhf" if i % 2 else "lora") for i in range(4)]
    for j in range(3):
        for job in jobs:
            job.steps.append(j + 1)
            job.evals.append(0.5)
            job.losses.append(None)
            job.proxies.append(None)
            ov.on_eval(job, 0.0)
    assert sorted(ov.fleets) == ["lora", "rlhf"]
    assert ov._detectors[1].fleet is ov._detectors[3].fleet is ov.fleets["rlhf"]
    assert ov.fleets["rlhf"].count == 2  # one second difference per job so far
    assert EvalStop(Base(), "evalstop:k=2", fleet=True).fleets is None


def test_tune_trial_detectors_share_one_fleet_and_save_it():
    pytest.importorskip("ray.tune")
    from evalstop.integrations.ray_tune import TrialDetectors

    fleet = FleetNoise()
    td = TrialDetectors("default", "score", "max", "training_iteration", fleet)
    for it in range(1, 5):
        for tid in ("a", "b"):
            td.feed(tid, {"score": 0.5 + 0.01 * (it % 2), "training_iteration": it})
    assert td.detectors["a"].fleet is fleet is td.detectors["b"].fleet
    state = json.loads(json.dumps(td.state_dict()))
    fleet2 = FleetNoise()
    td2 = TrialDetectors("default", "score", "max", "training_iteration", fleet2)
    td2.load_state_dict(state)
    assert fleet2.state_dict() == fleet.state_dict()


def test_hf_callback_takes_a_fleet():
    pytest.importorskip("transformers")
    from evalstop.integrations.hf import EvalStopCallback

    fleet = FleetNoise()
    cb = EvalStopCallback("eval_acc", fleet=fleet)
    assert cb.detector.fleet is fleet and cb.detector.spec == DEFAULT_SPEC
    with pytest.raises(ValueError, match="does not read"):
        EvalStopCallback("eval_acc", detector="evalstop:k=2", fleet=fleet)
