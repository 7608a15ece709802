"""Pooled noise that no tenant can steer (issue 43): an eval group is each tenant's own
unless the policy declares it shared, and in a shared group one tenant's flood of flat or
noisy jobs moves another tenant's noise no further than ``max_factor``.

The attack, as reported: tenant a floods the group with 300 jobs of flat evals (the pooled
sigma fell from 0.020 to 0.0009 and 23 of b's 30 healthy jobs were stopped) or of
alternating 0/1 evals (it rose to 0.92 and none of b's 5 declining jobs was stopped).
b's logs here are made with the noise 0.02 of that report (numpy Generator, seed fixed)."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest

from evalstop.detectors import make_detector
from evalstop.detectors.fleet import FleetNoise, pooled_sigma
from evalstop.detectors.recent_jobs import MAX_JOBS, PER_JOB, RecentJobsNoise
from evalstop.detectors.shared_noise import SharedNoise, TenantNoise
from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy
from evalstop.integrations.watch.status import fleet_rows, format_fleet

EVALS = 20
FLOODS = {"flat": [0.5] * EVALS, "noisy": [0.0, 1.0] * (EVALS // 2)}
PRIVATE = """
[defaults]
detector = "default"
eval_group = "math500"

[tenants.a]
[tenants.b]
"""
SHARED = PRIVATE + "\n[eval_groups.math500]\nshared = true\n"


def victim_jobs() -> dict[str, list[float]]:
    """b's 30 healthy jobs (a slow rise in noise 0.02) and 5 that decline from eval 9."""
    rng = np.random.default_rng(43)
    jobs = {}
    for i in range(30):
        jobs[f"ok-{i}"] = list(0.5 + 0.002 * np.arange(EVALS) + 0.02 * rng.standard_normal(EVALS))
    for i in range(5):
        x = 0.5 + 0.02 * rng.standard_normal(EVALS)
        x[8:] -= 0.03 * np.arange(1, EVALS - 7)
        jobs[f"down-{i}"] = list(x)
    return jobs


def write(path, jobs: dict[str, list[float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for job, values in jobs.items():  # job after job: fed in this order
            for step, v in enumerate(values, 1):
                fh.write(json.dumps({"job": job, "step": step, "eval": float(v)}) + "\n")


def controller(tmp_path, policy_text, metrics=None):
    pol = tmp_path / "policy.toml"
    pol.write_text(policy_text)
    policy = load_policy(str(pol))
    store = StateStore(str(tmp_path / "state.db"))
    return Controller(store, [JsonlDirSource(str(tmp_path / "logs"),
                                             tenancy=PolicyTenancy(policy))],
                      policy=policy, metrics=metrics, out=io.StringIO(), err=io.StringIO())


def attacked(tmp_path, policy_text, flood: str | None, n_flood: int = 300, metrics=None):
    """Run b's jobs after ``n_flood`` of a's ``flood`` jobs (read first: a sorts before b);
    return b's stopped jobs and the controller (closed)."""
    if flood is not None:
        write(tmp_path / "logs" / "a" / "flood.jsonl",
              {f"f-{i}": FLOODS[flood] for i in range(n_flood)})
    write(tmp_path / "logs" / "b" / "evals.jsonl", victim_jobs())
    ctl = controller(tmp_path, policy_text, metrics)
    ctl.run_until_idle()
    ctl.close()
    return {k.name for k, j in ctl.jobs.items() if j.tenant == "b" and j.detector.stopped}, ctl


class Edge(TenantNoise):
    """b's own estimate (in a shared group: from its latest jobs) read at a factor: the
    edge of the band the bound allows."""

    def __init__(self, factor: float, job: str = "") -> None:
        super().__init__(SharedNoise("g", max_factor=1.5), "b", job)
        self.factor = factor

    def sigma(self):
        s = self.group.own("b").sigma()
        return None if s is None else s * self.factor

    def job_view(self, job: str) -> Edge:
        edge = Edge(self.factor, job)
        edge.group = self.group
        return edge


def stopped_with(fleet) -> set[str]:
    """b's stops, its jobs fed in the controller's order, reading ``fleet`` (a view per
    job where it has them)."""
    out = set()
    for job, values in victim_jobs().items():
        det = make_detector("default", fleet=fleet.job_view(job)
                            if hasattr(fleet, "job_view") else fleet)
        for step, v in enumerate(values, 1):
            det.update(step, v)
        if det.stopped:
            out.add(job)
    return out


def healthy(stops):
    return {j for j in stops if j.startswith("ok-")}


def declining(stops):
    return {j for j in stops if j.startswith("down-")}


@pytest.mark.parametrize("flood", ["flat", "noisy"])
def test_an_eval_group_is_each_tenants_own_unless_shared(tmp_path, flood):
    alone, _ = attacked(tmp_path / "alone", PRIVATE, None)
    under_attack, ctl = attacked(tmp_path / "attacked", PRIVATE, flood)
    assert under_attack == alone  # a's jobs do not reach b's noise at all
    assert ctl.fleets["math500"].sigma_for("b") == ctl.fleets["math500"].tenants["b"].sigma()
    assert len(declining(alone)) >= 4 and len(healthy(alone)) <= 3  # the rule works here


@pytest.mark.parametrize("flood, edge", [("flat", 1 / 1.5), ("noisy", 1.5)])
def test_a_shared_group_bounds_what_one_tenant_can_do_to_another(tmp_path, flood, edge):
    alone = stopped_with(Edge(1.0))  # b on its own estimate
    pooled = FleetNoise()  # the group as one pool of jobs, for comparison
    for _ in range(300):
        det = make_detector("default", fleet=pooled)
        for step, v in enumerate(FLOODS[flood], 1):
            det.update(step, v)
    unbounded = stopped_with(pooled)
    under_attack, ctl = attacked(tmp_path, SHARED, flood)
    group = ctl.fleets["math500"]
    own = group.tenants["b"].sigma()
    # a's estimate is far out (0 or ~1); the median of two is halfway; b reads the edge
    assert group.sigma_for("b") == pytest.approx(own * edge, rel=1e-12)
    # so b's stops are exactly those at the edge of the band, and no worse
    assert under_attack == stopped_with(Edge(edge))
    if flood == "flat":  # healthy jobs stopped: far fewer than with one pool of jobs
        assert len(healthy(unbounded)) >= 20
        assert len(healthy(under_attack)) <= len(healthy(alone)) + 5
    else:  # declining jobs still stopped
        assert declining(unbounded) == set()
        assert len(declining(under_attack)) >= len(declining(alone)) - 1


def test_a_shared_group_weighs_tenants_not_jobs(tmp_path):
    few, ctl_few = attacked(tmp_path / "few", SHARED, "flat", n_flood=3)
    many, ctl_many = attacked(tmp_path / "many", SHARED, "flat", n_flood=300)
    assert few == many
    assert ctl_few.fleets["math500"].sigma_for("b") == ctl_many.fleets["math500"].sigma_for("b")


def noise(rng, sigma, n=400):
    """Second differences of evals with noise ``sigma``."""
    x = sigma * rng.standard_normal(n)
    return x[:-2] - 2 * x[1:-1] + x[2:]


@pytest.mark.parametrize("attack", [0.0, 1.0, 1e6])
def test_with_three_tenants_one_cannot_move_the_median_past_the_others(attack):
    rng = np.random.default_rng(7)
    group = SharedNoise("g", max_factor=4.0)
    for tenant, sigma in (("b", 0.02), ("c", 0.03)):
        for d in noise(rng, sigma):
            group.add(tenant, d)
    for _ in range(1000):  # a's flood: one value, repeated
        group.add("a", attack)
    lo, hi = sorted(group.tenants[t].sigma() for t in ("b", "c"))
    assert lo <= group.sigma_for("b") <= hi and lo <= group.sigma_for("c") <= hi


def test_no_estimate_of_its_own_no_fleet_noise():
    group = SharedNoise("g", max_factor=1.5)
    for _ in range(100):
        group.add("a", 0.01)
    assert group.sigma_for("a") is not None
    assert group.sigma_for("b") is None  # b has no reference to bound a's estimate by
    assert group.view("b").sigma() is None and group.view("b").count == 0


def test_shared_noise_survives_a_restart_and_shows_on_status_and_metrics(tmp_path):
    from evalstop.integrations.watch.observe import WatchMetrics

    metrics = WatchMetrics()
    _, ctl = attacked(tmp_path, SHARED, "flat", n_flood=3, metrics=metrics)
    group = ctl.fleets["math500"]
    read, own = group.sigma_for("b"), group.tenants["b"].sigma()
    assert read is not None and read < own
    gauge = metrics.registry.get_sample_value("evalstop_fleet_noise_sigma",
                                              {"group": "math500", "tenant": "b"})
    assert gauge == read
    ctl2 = controller(tmp_path, SHARED)  # restart: the estimates and the bound come back
    assert ctl2.fleets["math500"].sigma_for("b") == read
    assert ctl2.fleets["math500"].max_factor == 1.5
    ctl2.close()
    ro = StateStore(str(tmp_path / "state.db"), readonly=True)
    rows = {r["tenant"]: r for r in fleet_rows(ro)}
    assert rows["b"]["sigma"] == read and rows["b"]["own"] == own
    assert math.isclose(rows["b"]["sigma"], own / 1.5)
    assert rows["a"]["jobs"] == 3 and rows["b"]["jobs"] == 35


def test_status_of_a_state_without_per_tenant_noise_shows_none(tmp_path):
    import sqlite3

    path = str(tmp_path / "old.db")
    store = StateStore(path)
    store.close()
    db = sqlite3.connect(path)  # as a state written before the table existed
    db.execute("DROP TABLE fleet_tenants")
    db.commit()
    db.close()
    assert fleet_rows(StateStore(path, readonly=True)) == []


def flood_jobs(n: int, first: int = 0) -> dict[str, list[float]]:
    """a's jobs f-first..f-(first+n-1), each with its own noise level (so which jobs an
    estimate comes from shows in it), all rising steeply: none is stopped, whatever
    noise it reads, so each feeds all its differences."""
    out = {}
    for i in range(first, first + n):
        rng = np.random.default_rng(1000 + i)
        out[f"f-{i}"] = list(0.1 + 0.05 * np.arange(EVALS)
                             + 0.002 * (1 + i % 13) * rng.standard_normal(EVALS))
    return out


def run_group(tmp_path, a_jobs):
    write(tmp_path / "logs" / "a" / "flood.jsonl", a_jobs)
    write(tmp_path / "logs" / "b" / "evals.jsonl", victim_jobs())
    ctl = controller(tmp_path, SHARED)
    ctl.run_until_idle()
    ctl.close()
    stops = {k.name for k, j in ctl.jobs.items() if j.tenant == "b" and j.detector.stopped}
    return ctl.fleets["math500"], stops, ctl


def test_a_tenant_with_300_jobs_weighs_in_by_its_8_latest(tmp_path):
    many, stops_many, _ = run_group(tmp_path / "many", flood_jobs(300))
    few, stops_few, _ = run_group(tmp_path / "few", flood_jobs(MAX_JOBS, first=300 - MAX_JOBS))
    a = many.tenants["a"]
    # Bounded: 8 jobs, 18 differences each (20 evals), whatever a ran before them.
    assert (a.jobs, a.count) == (MAX_JOBS, MAX_JOBS * (EVALS - 2))
    assert len(json.dumps(a.state_dict())) < 20 * MAX_JOBS * PER_JOB
    # The estimate from 300 jobs is the one from the last 8 alone, exactly...
    assert a.sigma() == few.tenants["a"].sigma()
    everything = FleetNoise()  # ...not the one pooled over all 300
    for values in flood_jobs(300).values():
        det = make_detector("default", fleet=everything)
        for step, v in enumerate(values, 1):
            det.update(step, v)
    assert abs(everything.sigma() / a.sigma() - 1) > 0.05
    # b's stops and the noise it reads do not depend on a's older 292 jobs; they stay
    # within the bound around b's own estimate.
    assert stops_many == stops_few
    b_own = many.tenants["b"].sigma()
    assert many.sigma_for("b") == few.sigma_for("b")
    assert b_own / 1.5 <= many.sigma_for("b") <= b_own * 1.5


def test_status_says_which_jobs_an_estimate_comes_from(tmp_path):
    run_group(tmp_path, flood_jobs(12))
    text = format_fleet(fleet_rows(StateStore(str(tmp_path / "state.db"), readonly=True)))
    assert re.search(r"\[a\]: sigma .* from \d+ evals of its latest 8 of 12 jobs\n", text)
    assert re.search(r"\[b\]: sigma .* from \d+ evals of its latest 8 of 35 jobs\n", text)
    from evalstop.integrations.watch.status import page_html

    page = page_html(str(tmp_path / "state.db"))
    assert "<td>its latest 8 of 12</td>" in page and "<td>its latest 8 of 35</td>" in page


def test_a_job_gives_its_first_differences_and_a_dropped_job_stays_out():
    est = RecentJobsNoise()
    for i in range(100):
        est.add(0.01 * (1 + i % 3), i, job="long")
    assert (est.jobs, est.count) == (1, PER_JOB)  # its first 64 only
    for j in range(MAX_JOBS):  # eight newer jobs drop "long"
        est.add(0.02, 0, job=f"new-{j}")
    assert "long" not in {job for job, _ in est.state_dict()["jobs"]}
    before = est.state_dict()
    est.add(0.5, 100, job="long")  # more from it: not taken back in
    est.add(0.5, 3, job="unseen")  # a job whose start was never seen: likewise
    assert est.state_dict() == before
    restored = RecentJobsNoise.from_state(json.loads(json.dumps(before)))
    assert restored.state_dict() == before and restored.sigma() == est.sigma()


@pytest.mark.parametrize("seed", range(5))
def test_the_bounded_estimate_is_fleet_noises_estimator(seed):
    rng = np.random.default_rng(seed)
    diffs = list(np.abs(rng.standard_normal(200) * rng.uniform(0.001, 1)))
    if seed == 0:
        diffs[:25] = [0.0] * 25  # a zero scale: no clipping
    fleet = FleetNoise()
    for d in diffs:
        fleet.add(d)
    assert pooled_sigma(diffs, 30) == fleet.sigma()
    assert pooled_sigma(diffs[:29], 30) is None


def test_a_restart_mid_job_leaves_the_bounded_estimate_as_one_run_would(tmp_path):
    # a's 10 jobs half written, the controller restarted, the other halves written: the
    # jobs held and their differences are those of one uninterrupted run.
    jobs = flood_jobs(10)
    halves = [{j: v[:10] for j, v in jobs.items()}, {j: v[10:] for j, v in jobs.items()}]

    def lines(path, part, first_step):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            for job, values in part.items():
                for step, v in enumerate(values, first_step):
                    fh.write(json.dumps({"job": job, "step": step, "eval": v}) + "\n")

    def state(root, restart: bool) -> dict:
        log = root / "logs" / "a" / "a.jsonl"
        lines(log, halves[0], 1)
        if restart:
            first = controller(root, SHARED)
            first.run_until_idle()
            first.close()
        lines(log, halves[1], 11)
        ctl = controller(root, SHARED)
        ctl.run_until_idle()
        ctl.close()
        # The jobs' differences in order (their ids digest the log's path, which differs).
        return [v for _job, v in ctl.fleets["math500"].tenants["a"].state_dict()["jobs"]]

    once = state(tmp_path / "once", restart=False)
    assert len(once) == MAX_JOBS and all(len(v) == EVALS - 2 for v in once)
    assert state(tmp_path / "twice", restart=True) == once
