"""Shadow mode that keeps score (``integrations.watch.shadow``): a controller follows the
shipped lab corpus, written as live logs by three tenants, in shadow, and its score per
tenant and rule equals the same figures computed offline by ``evalstop replay`` and the
tenant-harm metric on the same runs; a restarted (SIGKILLed) controller gives the same
score; one tenant's logs cannot change another's score."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
import tomllib
from importlib import resources
from statistics import median

import numpy as np
import pytest
from conftest import kill_store

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore, shadow_store
from evalstop.integrations.watch.policy import PolicyError, PolicyTenancy, parse_policy
from evalstop.integrations.watch.shadow_status import shadow_rows
from evalstop.metrics.tenant_harm import TENANT_TOL, tenant_harm

TENANTS = ("alpha", "beta", "gamma")
POLICY = """
shadow = ["evalstop:k=2"]
[defaults]
detector = "default"
dry_run = true
[tenants.alpha]
shadow = ["default:sigma=0.01"]
[tenants.beta]
gpus = 2
[tenants.gamma]
detector = "evalstop:k=3"
"""
# The rules each tenant's jobs are followed with: its own (dry run) and its candidates.
RULES = {"alpha": ("default", "evalstop:k=2", "default:sigma=0.01"),
         "beta": ("default", "evalstop:k=2"),
         "gamma": ("evalstop:k=3", "evalstop:k=2")}
GPUS = {"alpha": 8.0, "beta": 2.0, "gamma": None}  # alpha's from its records, beta's policy
MINUTE = 60.0  # each record's "time": a minute a step-of-ten


def lab_runs() -> dict[str, list[dict]]:
    path = resources.files("evalstop") / "data" / "lab_corpus.jsonl.gz"
    runs: dict[str, list[dict]] = {}
    with gzip.open(str(path), "rt") as fh:
        for line in fh:
            r = json.loads(line)
            runs.setdefault(r["job"], []).append(r)
    return runs


def tenant_of(i: int) -> str:
    return TENANTS[i % len(TENANTS)]


def live_lines(runs: dict[str, list[dict]]):
    """(tenant, file, line) in the order a live fleet writes them: eval k of every job,
    then eval k+1; half the jobs mark their last record ``"end": true``, alpha's records
    carry their GPU count, every record its time."""
    names = sorted(runs)
    width = max(len(r) for r in runs.values())
    for k in range(width):
        for i, name in enumerate(names):
            recs = runs[name]
            if k >= len(recs):
                continue
            r = dict(recs[k])
            r["time"] = r["step"] / 10 * MINUTE
            tenant = tenant_of(i)
            if tenant == "alpha":
                r["gpus"] = 8
            if i % 2 == 0 and k == len(recs) - 1:
                r["end"] = True
            yield tenant, f"{tenant}/runs-{i % 2}.jsonl", json.dumps(r) + "\n"


def write_lines(root, lines) -> None:
    for _tenant, rel, line in lines:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fh.write(line)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def controller(tmp_path, clock, db="w.db", policy=POLICY, end_after=600.0, **kw):
    pol = parse_policy(tomllib.loads(policy), "policy.toml")
    store = StateStore(str(tmp_path / db))
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    src = JsonlDirSource(str(tmp_path / "logs"), tenancy=PolicyTenancy(pol))
    return Controller(store, [src], policy=pol, shadow_end_after=end_after, shadow_clock=clock,
                      err=io.StringIO(), out=io.StringIO(), **kw)


def run_live(tmp_path, runs, chunks=7):
    """Write the corpus as live logs in ``chunks`` pieces, polling after each, then let
    every job time out; returns the controller's store path."""
    clock = Clock()
    ctl = controller(tmp_path, clock)
    lines = list(live_lines(runs))
    for part in np.array_split(np.arange(len(lines)), chunks):
        write_lines(tmp_path / "logs", [lines[i] for i in part])
        ctl.run_until_idle()
        clock.t += 30
    clock.t += 3600  # no record for an hour: every job not ended by its marker has ended
    ctl.poll_once()
    ctl.close()
    return tmp_path / "w.db"


def offline(runs, tmp_path):
    """The same figures computed offline: each rule by ``evalstop replay`` over the whole
    corpus, each stop's cost by ``tenant_harm`` over all runs at once."""
    names = sorted(runs)
    log = tmp_path / "corpus.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for n in names for r in runs[n]))
    width = max(len(runs[n]) for n in names)
    scores = np.full((len(names), width), np.nan)
    for i, n in enumerate(names):
        scores[i, :len(runs[n])] = [r["eval"] for r in runs[n]]
    n_evals = np.array([len(runs[n]) for n in names])
    out = {}
    for spec in sorted({s for rules in RULES.values() for s in rules}):
        res = subprocess.run([sys.executable, "-m", "evalstop", "replay", str(log),
                              "--detector", spec], capture_output=True, text=True,
                             check=True)
        decided = {d["job"]: d for d in map(json.loads, res.stdout.splitlines())}
        steps = [[r["step"] for r in runs[n]] for n in names]
        stopped = np.array([decided[n]["stopped"] for n in names])
        stop_idx = np.array([steps[i].index(decided[n]["stop_step"]) if stopped[i] else 0
                             for i, n in enumerate(names)])
        kept = np.array([steps[i].index(decided[n]["best_step"]) if stopped[i] else 0
                         for i, n in enumerate(names)])
        th = tenant_harm(scores, stopped, kept, np.zeros(len(names), bool), n_evals=n_evals)
        for i, n in enumerate(names):
            tenant = tenant_of(i)
            if spec not in RULES[tenant]:
                continue
            row = {"stopped": bool(stopped[i])}
            if stopped[i]:
                loss = float(th.loss[i])
                after = int(n_evals[i] - 1 - stop_idx[i])
                wall = (runs[n][-1]["step"] - decided[n]["stop_step"]) / 10 * MINUTE
                row.update(stop_step=decided[n]["stop_step"], best_step=decided[n]["best_step"],
                           evals_after=after, loss=loss, wall_s=wall,
                           gpu_hours=None if GPUS[tenant] is None
                           else GPUS[tenant] * wall / 3600,
                           verdict="harmful" if loss > TENANT_TOL else
                           "right" if loss < -TENANT_TOL else "neutral")
            out[(tenant, spec, n)] = row
    return out


def offline_summary(per_run):
    agg = {}
    for (tenant, spec, _n), row in per_run.items():
        e = agg.setdefault((tenant, spec), {"runs": 0, "stops": 0, "right": 0, "harmful": 0,
                                            "neutral": 0, "evals_freed": 0,
                                            "gpu_hours_freed": 0.0, "costs": []})
        e["runs"] += 1
        if row["stopped"]:
            e["stops"] += 1
            e[row["verdict"]] += 1
            e["evals_freed"] += row["evals_after"]
            e["gpu_hours_freed"] += row["gpu_hours"] or 0.0
            if math.isfinite(row["loss"]):
                e["costs"].append(row["loss"])
    return agg


@pytest.fixture(scope="module")
def lab():
    return lab_runs()


@pytest.fixture(scope="module")
def live_and_offline(lab, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shadow")
    db = run_live(tmp, lab)
    return db, offline(lab, tmp)


def test_score_equals_replay_and_tenant_harm(live_and_offline):
    db, expect = live_and_offline
    store = StateStore(str(db), readonly=True)
    try:
        got = {(s["tenant"], s["rule"], s["job"]): s for s in shadow_store.scores(store)}
        rows = shadow_rows(store)
    finally:
        store.close()
    assert set(got) == set(expect) and len(got) == 120 * 7 // 3
    for key, want in expect.items():
        s = got[key]
        assert bool(s["stopped"]) == want["stopped"], key
        assert s["censored"] == 0
        if not want["stopped"]:
            continue
        for f in ("stop_step", "best_step", "evals_after", "verdict"):
            assert s[f] == want[f], (key, f)
        assert s["wall_s"] == pytest.approx(want["wall_s"])
        assert (s["gpu_hours"] is None) == (want["gpu_hours"] is None)
        if want["gpu_hours"] is not None:
            assert s["gpu_hours"] == pytest.approx(want["gpu_hours"])
        if math.isfinite(want["loss"]):
            assert s["loss"] == pytest.approx(want["loss"], rel=1e-12, abs=1e-12)
        else:
            assert s["loss"] is None
    agg = offline_summary(expect)
    assert {(r["tenant"], r["rule"]) for r in rows} == set(agg)
    for r in rows:
        e = agg[(r["tenant"], r["rule"])]
        for f in ("runs", "stops", "right", "harmful", "neutral", "evals_freed"):
            assert r[f] == e[f], (r["tenant"], r["rule"], f)
        assert r["gpu_hours_freed"] == pytest.approx(e["gpu_hours_freed"])
        assert r["median_cost"] == pytest.approx(median(e["costs"]))
        assert r["live"] == (r["rule"] == RULES[r["tenant"]][0])
        assert r["pending"] == 0
        assert r["gpu_hours_unknown"] == (r["stops"] if r["tenant"] == "gamma" else 0)
    # The corpus gives the rules different scores: the comparison is not of zeros.
    assert len({(r["stops"], r["harmful"]) for r in rows}) > 3
    assert sum(r["harmful"] for r in rows) > 0 and sum(r["right"] for r in rows) > 0


def test_jobs_end_by_marker_or_silence(live_and_offline):
    db, _ = live_and_offline
    store = StateStore(str(db), readonly=True)
    try:
        reasons = {j["job"]: j["end_reason"] for j in shadow_store.followed(store)}
    finally:
        store.close()
    names = sorted(reasons)
    assert all(reasons[n] == "end marker" for n in names[::2])
    assert all(reasons[n] == "no record for 600 s" for n in names[1::2])


def test_a_job_is_not_ended_while_records_come(tmp_path, lab):
    """Before the silence, a job without an end marker is still followed, its would-be
    stop pending; the score counts it only once the job has ended."""
    clock = Clock()
    ctl = controller(tmp_path, clock, end_after=600.0)
    lines = [x for x in live_lines(lab) if '"end": true' not in x[2]]
    write_lines(tmp_path / "logs", lines)
    ctl.run_until_idle()
    clock.t += 599
    ctl.poll_once()
    rows = shadow_rows(ctl.store)
    assert sum(r["runs"] for r in rows) == 0 and sum(r["pending"] for r in rows) > 0
    clock.t += 1
    ctl.poll_once()
    rows = shadow_rows(ctl.store)
    assert sum(r["pending"] for r in rows) == 0 and sum(r["runs"] for r in rows) == 280
    ctl.close()


def _score(db) -> list[dict]:
    store = StateStore(str(db), readonly=True)
    try:
        return shadow_rows(store)
    finally:
        store.close()


def test_crash_before_commit_then_resume_gives_the_same_score(tmp_path, lab,
                                                              live_and_offline):
    """Killed in the middle of polls (the uncommitted transaction lost) and restarted from
    the state database, again and again: the same score as the uninterrupted run."""
    db, _ = live_and_offline
    clock = Clock()
    lines = list(live_lines(lab))
    parts = np.array_split(np.arange(len(lines)), 9)
    ctl = controller(tmp_path, clock)
    for k, part in enumerate(parts):
        write_lines(tmp_path / "logs", [lines[i] for i in part])
        if k % 2:  # this poll dies before its commit: nothing of it is kept
            real = ctl.store.save_batch

            def die(*a, real=real, **kw):
                kill_store(ctl.store)
                raise KeyboardInterrupt
            ctl.store.save_batch = die
            with pytest.raises(KeyboardInterrupt):
                ctl.poll_once()
            ctl = controller(tmp_path, clock)
        ctl.run_until_idle()
        clock.t += 30
    clock.t += 3600
    ctl.poll_once()
    ctl.close()
    assert _score(tmp_path / "w.db") == _score(db)


def _status_json(db) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "evalstop", "watch", "--status", "--score",
                          "--json", "--db", str(db)], capture_output=True, text=True,
                         check=True)
    return [json.loads(x) for x in out.stdout.splitlines()]


def test_sigkill_mid_run_then_resume_gives_the_same_score(tmp_path, lab):
    """A real controller process, SIGKILLed three times at random moments while the logs
    grow, then run to the end: ``--status --score --json`` gives the score of an uninterrupted
    run."""
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "logs").mkdir()
    cmd = [sys.executable, "-m", "evalstop", "watch", "--jsonl", str(tmp_path / "logs"),
           "--db", str(tmp_path / "k.db"), "--policy", str(tmp_path / "policy.toml"),
           "--shadow-end-after", "600"]
    rng = np.random.default_rng(47)
    # Only the marked jobs end (by their marker): silence would need the wall clock.
    lines = [x for x in live_lines(lab) if x[0] != "gamma"]
    parts = np.array_split(np.arange(len(lines)), 12)
    proc = None
    kills = 0
    for k, part in enumerate(parts):
        if proc is None:
            proc = subprocess.Popen([*cmd, "--interval", "0.05"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        write_lines(tmp_path / "logs", [lines[i] for i in part])
        time.sleep(float(rng.uniform(0.2, 0.8)))
        if k in (3, 6, 9):
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc, kills = None, kills + 1
    if proc is not None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    subprocess.run([*cmd, "--once"], check=True, capture_output=True)
    assert kills == 3
    got = _status_json(tmp_path / "k.db")
    marked = [x for x in lines if '"end": true' in x[2]]
    assert sum(r["runs"] for r in got) == sum(len(RULES[t]) for t, _f, _l in marked)
    # Same as an uninterrupted in-process run over the same lines.
    clock = Clock()
    (tmp_path / "ref").mkdir()
    write_lines(tmp_path / "ref" / "logs", lines)
    ref = controller(tmp_path / "ref", clock)
    ref.run_until_idle()
    ref.close()
    assert got == _score(tmp_path / "ref" / "w.db")


def test_a_tenants_logs_cannot_change_another_tenants_score(tmp_path, lab):
    """beta's score is the same whatever alpha writes: jobs named like beta's, floods,
    refused lines, end markers for beta's job names."""
    beta = [x for x in live_lines(lab) if x[0] == "beta"]
    alone = tmp_path / "alone"
    alone.mkdir()
    write_lines(alone / "logs", beta)
    clock = Clock()
    ctl = controller(alone, clock)
    ctl.run_until_idle()
    clock.t += 3600
    ctl.poll_once()
    ctl.close()
    hostile = []
    for _t, _f, line in beta:
        r = json.loads(line)
        r.update(eval=-r["eval"], end=True, gpus=1000)
        hostile.append(("alpha", "alpha/beta.jsonl", json.dumps(r) + "\n"))
    hostile += [("alpha", "alpha/junk.jsonl", "{not json\n"),
                ("alpha", "alpha/x.jsonl", json.dumps({"job": "p100-b0-s1", "step": 1,
                                                       "eval": 1.0, "end": "yes"}) + "\n")]
    both = tmp_path / "both"
    both.mkdir()
    write_lines(both / "logs", hostile + beta)
    clock = Clock()
    ctl = controller(both, clock)
    ctl.run_until_idle()
    clock.t += 3600
    ctl.poll_once()
    assert ctl.refused["schema"] == 1 and ctl.refused["json"] == 1
    ctl.close()
    alone_rows = [r for r in _score(alone / "w.db") if r["tenant"] == "beta"]
    assert alone_rows and alone_rows == [r for r in _score(both / "w.db")
                                         if r["tenant"] == "beta"]


def test_shadow_state_counts_against_the_tenant_bytes(tmp_path):
    """A followed job reserves its shadow tables too: a quota that holds a job without
    shadow rules refuses it with them."""
    from evalstop.integrations.watch.quota import job_bytes

    (tmp_path / "logs" / "t").mkdir(parents=True)
    (tmp_path / "logs" / "t" / "a.jsonl").write_text(
        json.dumps({"job": "j", "step": 1, "eval": 1.0}) + "\n")
    need = job_bytes(str(tmp_path / "logs" / "t" / "a.jsonl"), "j", 2000)
    plain = "[tenants.t]\n"
    for policy, refused in ((plain, 0), ('shadow = ["evalstop:k=2"]\n' + plain, 1)):
        ctl = controller(tmp_path, Clock(), db=f"q{refused}.db", policy=policy,
                         tenant_bytes=need + 1000)
        ctl.run_until_idle()
        assert ctl.refused["quota"] == refused
        ctl.close()


@pytest.mark.parametrize("text, problem", [
    ('shadow = ["nope"]\n[tenants.a]\n', "policy.toml: shadow: nope: unknown detector"),
    ('[tenants.a]\nshadow = "evalstop:k=2"\n', "tenants.a.shadow: must be a list"),
    ('[tenants.a]\nshadow = ["evalstop:q=2"]\n', "tenants.a.shadow: evalstop:q=2: unknown key"),
    ('[tenants.a]\ngpus = 0\n', "tenants.a.gpus: must be a number in (0, 1e6]"),
    ('shadow = 3\n[tenants.a]\n', "policy.toml: shadow: must be a list"),
])
def test_bad_shadow_policy_is_one_line(text, problem):
    with pytest.raises(PolicyError) as exc:
        parse_policy(tomllib.loads(text), "policy.toml")
    assert problem in str(exc.value) and "\n" not in str(exc.value)


def test_records_gpus_and_end_are_checked():
    from evalstop.evallog import RecordError, parse_record

    rec = parse_record('{"job": "a", "step": 1, "eval": 1, "gpus": 4, "end": true}', "x:1")
    assert rec.gpus == 4.0 and rec.end is True
    assert parse_record('{"job": "a", "step": 1, "eval": 1}', "x:1").end is False
    for bad in ('"gpus": 0', '"gpus": -1', '"gpus": "8"', '"end": 1', '"end": "true"'):
        with pytest.raises(RecordError):
            parse_record('{"job": "a", "step": 1, "eval": 1, %s}' % bad, "x:1")


def test_status_report_and_corpus_export(live_and_offline, lab, tmp_path):
    db, _ = live_and_offline
    run = [sys.executable, "-m", "evalstop", "watch", "--db", str(db)]
    text = subprocess.run([*run, "--status"], capture_output=True, text=True,
                          check=True).stdout
    assert "shadow score by tenant and rule" in text
    assert "alpha default [its own rule, dry run]:" in text
    rows = _status_json(db)
    assert rows == json.loads(json.dumps(_score(db)))
    corpus = tmp_path / "fleet.jsonl"
    subprocess.run([*run, "--export-corpus", str(corpus), "--report", str(tmp_path / "r")],
                   check=True, capture_output=True)
    assert {p.name for p in (tmp_path / "r").iterdir()} == {
        "report.html", "report.md", "shadow_savings.png", "shadow_curves.png"}
    md = (tmp_path / "r" / "report.md").read_text()
    for r in _score(db):
        assert f"| {r['tenant']} | {r['rule']}" in md
    # The export replays as the corpus it came from.
    recs = [json.loads(x) for x in corpus.read_text().splitlines()]
    assert len(recs) == sum(len(v) for v in lab.values())
    assert {r["tenant"] for r in recs} == set(TENANTS)
    assert {r["gpus"] for r in recs if r["tenant"] == "alpha"} == {8}
    orig = tmp_path / "orig.jsonl"
    orig.write_text("".join(json.dumps(r) + "\n" for v in lab.values() for r in v))
    replays = [subprocess.run([sys.executable, "-m", "evalstop", "replay", str(p),
                               "--detector", "evalstop:k=2"], capture_output=True, text=True,
                              check=True).stdout.splitlines() for p in (corpus, orig)]
    assert sorted(replays[0]) == sorted(replays[1])
    noise = subprocess.run([sys.executable, "-m", "evalstop", "noise", str(corpus)],
                           capture_output=True, text=True)
    assert noise.returncode == 0 and "stop rule: --detector" in noise.stdout
    again = subprocess.run([*run, "--export-corpus", str(corpus)], capture_output=True,
                           text=True)
    assert again.returncode == 2 and "exists; not replaced" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def _in_chromium(path, script: str) -> tuple[list[str], dict]:
    """Open ``path`` in headless Chromium at 1366 px: its console and page errors, and
    what ``script`` (a JS function) returns."""
    from headless_browser import chromium_or_skip
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_or_skip(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 800})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            return errors, page.evaluate(script)
        finally:
            browser.close()


def test_report_in_a_real_browser(live_and_offline, tmp_path):
    from headless_browser import chromium_or_skip

    chromium_or_skip()

    from evalstop.integrations.watch.shadow_report import write_report

    db, _ = live_and_offline
    store = StateStore(str(db), readonly=True)
    try:
        html = write_report(store, str(tmp_path / "r"))
    finally:
        store.close()
    errors, info = _in_chromium(html, """() => ({
        images: [...document.images].map(i => [i.naturalWidth, i.complete]),
        rows: document.querySelectorAll('tbody tr').length,
        scrollWidth: document.documentElement.scrollWidth,
        scripts: document.scripts.length})""")
    assert errors == []
    assert len(info["images"]) == 2 and all(w > 600 and ok for w, ok in info["images"])
    assert info["rows"] == 7 and info["scripts"] == 0
    assert info["scrollWidth"] <= 1366


def test_page_shows_each_tenants_rule_beside_its_record(live_and_offline):
    from evalstop.integrations.watch.status import page_html

    db, _ = live_and_offline
    html = page_html(str(db), tenant_rules={"alpha": ("evalstop:k=2", False),
                                            "beta": ("default", True),
                                            "delta": ("default", False)})
    assert html.count('data-own="1"') == 3
    assert "evalstop:k=2 <span class=\"own-rule\">its rule (live)</span>" in html
    assert "no shadow record yet" in html  # delta: named, never followed


def test_page_with_the_score_in_a_real_browser(live_and_offline, tmp_path):
    from headless_browser import chromium_or_skip

    chromium_or_skip()

    from evalstop.integrations.watch.status import page_html

    db, _ = live_and_offline
    page_file = tmp_path / "page.html"
    page_file.write_text(page_html(str(db), per_page=5,
                                   tenant_rules={"alpha": ("default", True)}))
    errors, info = _in_chromium(page_file, """() => ({
        rules: document.querySelectorAll('tr.shadow-rule').length,
        own: [...document.querySelectorAll('tr.shadow-rule[data-own="1"] td')]
            .slice(0, 3).map(td => td.textContent),
        jobs: document.querySelectorAll('tr.job').length})""")
    assert errors == []
    assert info["rules"] == 7 and info["jobs"] == 5
    assert info["own"][:2] == ["alpha", "default its rule (dry run)"]


def test_prometheus_gauges_match_the_score(live_and_offline, tmp_path):
    pytest.importorskip("prometheus_client")
    from evalstop.integrations.watch.observe import WatchMetrics
    from evalstop.integrations.watch.shadow_status import ShadowMetrics

    db, _ = live_and_offline
    store = StateStore(str(db), readonly=True)
    metrics = WatchMetrics()
    try:
        ShadowMetrics(metrics, store).refresh()
        rows = shadow_rows(store)
    finally:
        store.close()
    text = metrics.exposition()[0].decode()
    for r in rows:
        labels = f'rule="{r["rule"]}",tenant="{r["tenant"]}"'
        assert f"evalstop_shadow_stops{{{labels}}} {float(r['stops'])}" in text
        assert (f'evalstop_shadow_verdicts{{{labels},verdict="harmful"}} '
                f"{float(r['harmful'])}") in text


def test_a_live_stop_that_acts_censors_the_job(tmp_path, lab):
    """A tenant whose rule acts: its jobs' candidates are followed, and a job its rule
    really stopped is counted apart (censored), never judged; a stop that runs no action
    (none configured, or a dry run) censors nothing."""
    policy = ('shadow = ["evalstop:k=2"]\n[tenants.alpha]\naction = "true {job}"\n'
              '[tenants.beta]\n[tenants.gamma]\ndry_run = true\naction = "true {job}"\n')
    write_lines(tmp_path / "logs", live_lines(lab))
    clock = Clock()
    ctl = controller(tmp_path, clock, policy=policy)
    ctl.run_until_idle()
    clock.t += 3600
    ctl.poll_once()
    rows = {(r["tenant"], r["rule"]): r for r in shadow_rows(ctl.store)}
    live_stops = {j.tenant: 0 for j in ctl.jobs.values()}
    for j in ctl.jobs.values():
        live_stops[j.tenant] += j.detector.stopped
    ctl.close()
    assert set(rows) == {("alpha", "evalstop:k=2"), ("beta", "evalstop:k=2"),
                         ("gamma", "default"), ("gamma", "evalstop:k=2")}
    alpha = rows[("alpha", "evalstop:k=2")]
    assert alpha["censored"] == live_stops["alpha"] > 0
    assert alpha["runs"] == 40 - live_stops["alpha"]
    assert live_stops["beta"] > 0 and rows[("beta", "evalstop:k=2")]["censored"] == 0
    assert rows[("beta", "evalstop:k=2")]["runs"] == 40
    assert rows[("gamma", "default")]["live"] and rows[("gamma", "default")]["censored"] == 0
    assert rows[("gamma", "default")]["stops"] == live_stops["gamma"]


def test_export_keeps_two_logs_jobs_of_one_name_apart(tmp_path):
    """Two logs (of one tenant, and of another) with a job of one name: three runs in the
    corpus, named apart, each with its own evals; NaN evals written null."""
    for rel, base in (("alpha/a.jsonl", 0.0), ("alpha/b.jsonl", 10.0), ("beta/a.jsonl", 20.0)):
        recs = [{"job": "run", "step": s, "eval": base + s, "end": s == 3} for s in range(4)]
        recs[1]["eval"] = float("nan")
        write_lines(tmp_path / "logs", [(None, rel, json.dumps(r) + "\n") for r in recs])
    ctl = controller(tmp_path, Clock())
    ctl.run_until_idle()
    ctl.close()
    store = StateStore(str(tmp_path / "w.db"), readonly=True)
    try:
        from evalstop.integrations.watch.shadow_export import export_corpus

        assert export_corpus(store, str(tmp_path / "c.jsonl")) == (3, 12)
    finally:
        store.close()
    recs = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    firsts = {(r["tenant"], r["job"]): r["eval"] for r in recs if r["step"] == 0}
    assert firsts == {("alpha", "run"): 0.0, ("alpha", "run~2"): 10.0,
                      ("beta", "run~3"): 20.0}
    assert [r["eval"] for r in recs if r["step"] == 1] == [None, None, None]
