"""What the controller keeps per tenant is bounded: the evals of each job (the newest
``keep_evals``, what the page shows) and the jobs of each tenant (``max_jobs``, refused
past it in one line per interval, not one per record)."""

from __future__ import annotations

import io
import sqlite3

from watch_hostile_util import append, line

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore


def _ctl(tmp_path, **kw):
    (tmp_path / "logs").mkdir(exist_ok=True)
    store = StateStore(str(tmp_path / "s.db"), keep_evals=kw.pop("keep_evals", 2000))
    err = io.StringIO()
    ctl = Controller(store, [JsonlDirSource(str(tmp_path / "logs"))],
                     detector="evalstop:k=100000", err=err, out=io.StringIO(), **kw)
    return ctl, err


def test_evals_kept_per_job_are_bounded(tmp_path):
    ctl, _ = _ctl(tmp_path, keep_evals=50)
    for chunk in range(4):  # 400 evals over 4 polls
        append(str(tmp_path / "logs/t/a.jsonl"),
               b"".join(line("j", s, 0.5) for s in range(chunk * 100 + 1, chunk * 100 + 101)))
        ctl.poll_once()
    con = sqlite3.connect(tmp_path / "s.db")
    steps = [s for (s,) in con.execute("SELECT step FROM evals ORDER BY step")]
    con.close()
    assert steps == list(range(351, 401))  # the newest 50, the history the page needs
    (job,) = ctl.store.jobs().values()
    assert job.n_evals == 400  # the detector saw every one
    ctl.close()


def test_jobs_per_tenant_are_bounded_with_one_line(tmp_path):
    ctl, err = _ctl(tmp_path, max_jobs=10)
    append(str(tmp_path / "logs/flood/a.jsonl"),
           b"".join(line(f"j{i}", 1, 0.5) for i in range(1000)))
    append(str(tmp_path / "logs/quiet/a.jsonl"), line("mine", 1, 0.5))
    res = ctl.run_until_idle()[0]
    tenants = [j.tenant for j in ctl.store.jobs().values()]
    assert tenants.count("flood") == 10 and tenants.count("quiet") == 1
    assert res.refused == {"quota": 990}
    (msg,) = err.getvalue().splitlines()
    assert "tenant flood: has 10 jobs, its quota (--max-jobs)" in msg
    ctl.close()
    ctl, err = _ctl(tmp_path, max_jobs=10)  # the quota holds across a restart
    append(str(tmp_path / "logs/flood/a.jsonl"), line("new", 1, 0.5))
    assert ctl.run_until_idle()[0].refused == {"quota": 1}
    ctl.close()


def test_state_bytes_per_tenant_are_a_quota_with_one_line(tmp_path):
    from evalstop.integrations.watch.quota import job_bytes

    logs = tmp_path / "logs"
    one = job_bytes(str(logs / "flood/a.jsonl"), "j0", 50)
    ctl, err = _ctl(tmp_path, keep_evals=50, tenant_bytes=3 * one + one // 2)
    append(str(logs / "flood/a.jsonl"), b"".join(line(f"j{i}", 1, 0.5) for i in range(8)))
    append(str(logs / "quiet/a.jsonl"), b"".join(line(f"q{i}", 1, 0.5) for i in range(3)))
    res = ctl.run_until_idle()[0]
    tenants = [j.tenant for j in ctl.store.jobs().values()]
    assert tenants.count("flood") == 3 and tenants.count("quiet") == 3  # quiet: unaffected
    assert res.refused == {"quota": 5}
    (msg,) = err.getvalue().splitlines()
    assert "tenant flood: holds" in msg and "(--tenant-bytes)" in msg
    ctl.close()
    ctl, err = _ctl(tmp_path, keep_evals=50, tenant_bytes=3 * one + one // 2)
    append(str(logs / "flood/a.jsonl"), line("j0", 2, 0.5) + line("new", 1, 0.5))
    res = ctl.run_until_idle()[0]  # across a restart: old jobs go on, new ones refused
    assert res.refused == {"quota": 1}
    assert ctl.store.jobs()[(str(logs / "flood/a.jsonl"), "j0")].n_evals == 2
    ctl.close()
