"""One controller, several tenants with their own rules (issue: per-tenant policy): metric,
mode, detector, dry-run, allow list and a fleet noise estimate per eval group that
survives a restart."""

from __future__ import annotations

import io
import json
import os

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

DOWN = [0.1, 0.3, 0.5, 0.4, 0.2]  # higher is better: k=2 stops at step 5, best step 3
LOSS = [0.9, 0.7, 0.5, 0.6, 0.8]  # lower is better: the same shape upside down


def write(path, job, values, key="eval"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for step, v in enumerate(values, 1):
            fh.write(json.dumps({"job": job, "step": step, key: v}) + "\n")


def make(tmp_path, policy_text):
    pol = tmp_path / "policy.toml"
    pol.write_text(policy_text)
    policy = load_policy(str(pol))
    root = tmp_path / "logs"
    root.mkdir(exist_ok=True)
    store = StateStore(str(tmp_path / "state.db"))
    out, err = io.StringIO(), io.StringIO()
    ctl = Controller(store, [JsonlDirSource(str(root), tenancy=PolicyTenancy(policy))],
                     policy=policy, out=out, err=err)
    return ctl, store, root, out, err


def actions(store):
    return {(a.tenant, a.job): (a.status, a.rc) for a in store.actions()}


POLICY = """
[defaults]
detector = "evalstop:k=2"
action = "echo {{tenant}}/{{job}} >> {marker}"

[tenants.alice]
mode = "min"
metric = "eval_loss"

[tenants.bob]
dry_run = true

[tenants.carol]
allow = ["carol-*"]
"""


def test_two_tenants_with_their_own_metric_mode_dry_run_and_allow_list(tmp_path):
    marker = tmp_path / "acts.txt"
    ctl, store, root, out, err = make(tmp_path, POLICY.format(marker=marker))
    write(root / "alice" / "a.jsonl", "alice-1", LOSS, key="eval_loss")  # min mode
    # a loss that only falls: it improves under mode=min (under max, k=2 would stop it)
    write(root / "alice" / "a.jsonl", "alice-2", [0.9, 0.8, 0.7, 0.6, 0.5], key="eval_loss")
    write(root / "bob" / "b.jsonl", "bob-1", DOWN)
    write(root / "carol" / "c.jsonl", "carol-1", DOWN)
    write(root / "carol" / "c.jsonl", "intruder", DOWN)  # not in carol's allow list
    write(root / "dave" / "d.jsonl", "dave-1", DOWN)  # no tenant of the policy owns it
    ctl.run_until_idle()
    ctl.close()
    got = actions(StateStore(str(tmp_path / "state.db"), readonly=True))
    assert got == {("alice", "alice-1"): ("done", 0), ("bob", "bob-1"): ("dry-run", None),
                   ("carol", "carol-1"): ("done", 0), ("carol", "intruder"): ("skipped", None)}
    # only the real (not dry-run, allowed) actions ran
    assert sorted(marker.read_text().split()) == ["alice/alice-1", "carol/carol-1"]
    assert "dry-run: would run for bob-1" in out.getvalue()
    assert "dave" in err.getvalue() and "no tenant of policy" in err.getvalue()


def test_a_missing_metric_is_refused_per_record(tmp_path):
    ctl, store, root, out, err = make(tmp_path, POLICY.format(marker=tmp_path / "m"))
    write(root / "alice" / "a.jsonl", "alice-1", DOWN)  # writes "eval", alice reads eval_loss
    res = ctl.poll_once()
    ctl.close()
    assert res.refused and "missing 'eval_loss'" in err.getvalue()


FLEET = """
[tenants.alice]
detector = "default"
eval_group = "math"

[tenants.bob]
detector = "default"
eval_group = "math"
"""


def test_an_eval_group_pools_each_tenants_own_noise_and_survives_a_restart(tmp_path):
    ctl, store, root, out, err = make(tmp_path, FLEET)
    rng = __import__("numpy").random.default_rng(0)
    for t in ("alice", "bob"):
        for j in range(3):
            write(root / t / f"{j}.jsonl", f"{t}-{j}", list(0.5 + 0.02 * rng.standard_normal(12)))
    ctl.run_until_idle()
    group = ctl.fleets["math"]
    assert sorted(group.tenants) == ["alice", "bob"]  # not shared: one estimate per tenant
    count = {t: f.count for t, f in group.tenants.items()}
    sigma = {t: group.sigma_for(t) for t in group.tenants}
    # 12 evals give 10 second differences per job; a job falsely stopped on this flat noise
    # adds them only up to the eval it stopped at; each tenant pools its own jobs only
    for t in ("alice", "bob"):
        assert count[t] == sum((j.stop_step or 12) - 2 for j in store.jobs().values()
                               if j.tenant == t) >= 3 * 10 - 10
        assert sigma[t] == group.tenants[t].sigma()  # a private group reads its own, exactly
        assert sigma[t] is not None and 0.01 < sigma[t] < 0.04  # the noise the logs have
    assert sigma["alice"] != sigma["bob"]
    ctl.close()
    # Restart: each tenant's estimate comes back as it was; a new job adds to its own only.
    ctl2, store2, root, out, err = make(tmp_path, FLEET)
    group2 = ctl2.fleets["math"]
    assert {t: (f.count, group2.sigma_for(t)) for t, f in group2.tenants.items()} == {
        t: (count[t], sigma[t]) for t in count}
    write(root / "alice" / "new.jsonl", "alice-new", list(0.5 + 0.02 * rng.standard_normal(5)))
    ctl2.run_until_idle()
    assert group2.tenants["alice"].count == count["alice"] + 3
    assert group2.tenants["bob"].count == count["bob"]
    ctl2.close()
    ro = StateStore(str(tmp_path / "state.db"), readonly=True)
    from evalstop.integrations.watch.status import fleet_rows, format_fleet
    rows = {r["tenant"]: r for r in fleet_rows(ro)}
    assert rows["alice"]["group"] == "math" and rows["alice"]["n"] == count["alice"] + 3
    assert rows["alice"]["jobs"] == 4  # the 3 jobs from before the restart still count
    assert rows["bob"]["jobs"] == 3 and rows["bob"]["sigma"] == sigma["bob"]
    assert "math [alice]: sigma" in format_fleet(list(rows.values()))


def test_status_json_is_one_line_per_job_and_the_fleet_is_behind_a_flag(tmp_path, capsys):
    from evalstop.cli.main import main

    ctl, store, root, out, err = make(tmp_path, FLEET)
    rng = __import__("numpy").random.default_rng(1)
    for j in range(3):
        write(root / "alice" / f"{j}.jsonl", f"alice-{j}", list(0.5 + 0.02 * rng.standard_normal(12)))
    ctl.run_until_idle()
    ctl.close()
    db = str(tmp_path / "state.db")
    capsys.readouterr()
    assert main(["watch", "--status", "--json", "--db", db]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert sorted(r["job"] for r in rows) == ["alice-0", "alice-1", "alice-2"]
    assert main(["watch", "--status", "--json", "--fleet", "--db", db]) == 0
    fleet = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(f["group"], f["jobs"]) for f in fleet] == [("math", 3)]
    assert main(["watch", "--status", "--fleet", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("fleet noise by eval group and tenant:\n  math [alice]: sigma")


def test_a_job_keeps_the_rule_it_started_with(tmp_path):
    ctl, store, root, out, err = make(tmp_path, '[tenants.alice]\ndetector = "evalstop:k=3"\n')
    write(root / "alice" / "a.jsonl", "alice-1", DOWN[:3])
    ctl.run_until_idle()
    ctl.close()
    # The policy changes to k=2: the running job keeps k=3 (its streak means k=3's streak)
    ctl, store, root, out, err = make(tmp_path, '[tenants.alice]\ndetector = "evalstop:k=2"\n')
    assert ctl.jobs[next(iter(ctl.jobs))].detector.spec.startswith("evalstop:k=3")
    with open(root / "alice" / "a.jsonl", "a") as fh:
        for step, v in ((4, 0.4), (5, 0.2)):
            fh.write(json.dumps({"job": "alice-1", "step": step, "eval": v}) + "\n")
    ctl.run_until_idle()
    assert not ctl.jobs[next(iter(ctl.jobs))].detector.stopped  # 2 declines: not k=3's stop
    write(root / "alice" / "b.jsonl", "alice-2", DOWN)  # a new job gets k=2
    ctl.run_until_idle()
    stopped = {k.name for k, j in ctl.jobs.items() if j.detector.stopped}
    ctl.close()
    assert stopped == {"alice-2"}
