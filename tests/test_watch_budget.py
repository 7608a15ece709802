"""Fair share between tenants (``budget``): one tenant's flood is read within its
per-poll budget, round-robin over its files, while every other tenant is read on every
poll; a flood of invalid lines writes a bounded number of lines (``throttle``); a file
waiting for the end of its last line is not read again until it changes."""

from __future__ import annotations

import io
import os

import pytest
from watch_hostile_util import append, declining, line

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.budget import Budget, Shares
from evalstop.integrations.watch.throttle import Throttle


def _ctl(tmp_path, budget=None, **kw):
    (tmp_path / "logs").mkdir(exist_ok=True)
    err = io.StringIO()
    src = JsonlDirSource(str(tmp_path / "logs"), budget=budget, **kw)
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], detector="evalstop:k=2",
                     err=err, out=io.StringIO())
    return ctl, err


def _flood(tmp_path, files, lines, tenant="flood"):
    for f in range(files):
        append(str(tmp_path / f"logs/{tenant}/part{f:03d}.jsonl"),
               b"".join(line(f"f{f}", s, float(s)) for s in range(1, lines + 1)))


@pytest.mark.parametrize("files,lines", [(1, 600), (20, 30)])
def test_a_flood_drains_over_polls_and_the_quiet_tenant_is_read_every_poll(
        tmp_path, files, lines):
    _flood(tmp_path, files, lines)
    ctl, err = _ctl(tmp_path, Budget(lines=100, files=5))
    append(str(tmp_path / "logs/quiet/run.jsonl"), declining("q", [0.1, 0.3]))
    first = ctl.poll_once()
    fed = [r.job for r in first.fed]
    assert fed.count("q") == 2  # the quiet tenant's records, in the first poll
    assert len(fed) - 2 <= 100  # the flood: one budget's worth
    append(str(tmp_path / "logs/quiet/run.jsonl"), line("q", 3, 0.5) + line("q", 4, 0.4)
           + line("q", 5, 0.2))
    second = ctl.poll_once()
    assert [k.name for k in second.stops] == ["q"]  # stopped in the next poll, not after
    polls = 2 + len(ctl.run_until_idle())
    jobs = {j.job: j.n_evals for j in ctl.store.jobs().values()}
    assert jobs == {"q": 5, **{f"f{f}": lines for f in range(files)}}  # nothing lost
    assert polls >= files * lines // 100
    assert err.getvalue().count("more to read than one poll's budget") == 1  # per interval
    ctl.close()


def test_round_robin_reaches_every_file_of_a_tenant():
    shares = Shares(Budget(), {})
    paths = ["a", "b", "c", "d"]
    assert shares.order("t", paths) == paths
    shares.read("t", "b")
    assert shares.order("t", paths) == ["c", "d", "a", "b"]
    shares.read("t", "d")
    assert shares.order("t", paths) == paths
    shares.read("t", "bb")  # a file gone since: the next one after it
    assert shares.order("t", paths) == ["c", "d", "a", "b"]


@pytest.mark.parametrize("bad", [{"lines": 0}, {"bytes": -1}, {"files": True},
                                 {"events": 1.5}])
def test_budget_must_be_positive_integers(bad):
    with pytest.raises(ValueError, match="budget"):
        Budget(**bad)


def test_invalid_line_flood_writes_a_bounded_number_of_lines(tmp_path):
    append(str(tmp_path / "logs/evil/x.jsonl"), b"not json\n" * 5000)
    ctl, err = _ctl(tmp_path)
    append(str(tmp_path / "logs/good/run.jsonl"), declining())
    res = ctl.run_until_idle()
    assert sum(r.refused["json"] for r in res) == 5000  # every one counted
    assert {j.job for j in ctl.store.jobs().values() if j.stopped} == {"train"}
    ctl.close()  # the summary of what was not shown
    lines = err.getvalue().splitlines()
    assert len(lines) <= 22, len(lines)
    assert "tenant evil: 4980 more refused lines or files not shown (json: 4980)" in lines[-1]


def test_throttle_summarises_once_per_interval():
    said, now = [], [0.0]
    t = Throttle(said.append, burst=2, interval=10, clock=lambda: now[0])
    for i in range(5):
        t.refused("a", "json", f"x:{i}: bad")
    t.refused("b", "step", "y:1: bad")
    assert said == ["x:0: bad; refused", "x:1: bad; refused", "y:1: bad; refused"]
    t.flush()
    assert len(said) == 3  # the interval has not ended
    now[0] = 10.0
    t.flush()
    assert said[3] == ("tenant a: 3 more refused lines or files not shown (json: 3); at most 2 "
                       "are shown per 10 s")
    t.refused("a", "json", "x:9: bad")  # a new interval: shown again
    assert said[-1] == "x:9: bad; refused"


def test_a_line_without_its_newline_is_not_read_again_until_the_file_changes(
        tmp_path, monkeypatch):
    ctl, _ = _ctl(tmp_path)
    sparse = tmp_path / "logs" / "t" / "sparse.jsonl"
    sparse.parent.mkdir(parents=True)
    with open(sparse, "wb") as fh:
        fh.truncate(512 * 1024)  # sparse: all zeros, no newline
    opened = []
    real = os.open

    def spy(path, *a, **kw):
        if str(path).endswith("sparse.jsonl"):
            opened.append(path)
        return real(path, *a, **kw)
    monkeypatch.setattr(os, "open", spy)
    for _ in range(5):
        ctl.poll_once()
    assert len(opened) == 1  # read once, then left alone
    append(str(sparse), b"\n" + line("j", 1, 0.5))
    ctl.poll_once()
    assert len(opened) == 2
    assert ctl.refused == {"json": 1}  # the zeros, once the line ended
    assert {j.job for j in ctl.store.jobs().values()} == {"j"}
    ctl.close()


def test_a_backlog_is_polled_again_at_once(tmp_path):
    _flood(tmp_path, 1, 95)
    ctl, _ = _ctl(tmp_path, Budget(lines=10))
    waits = []

    def should_stop(timeout):
        waits.append(timeout)
        return len(waits) >= 12
    ctl.run_forever(60.0, should_stop)
    assert waits[:9] == [0.0] * 9  # 95 lines at 10 a poll: no wait while some are left
    assert waits[10] > 50  # then the interval again
    (job,) = ctl.store.jobs().values()
    assert job.n_evals == 95
    ctl.close()
