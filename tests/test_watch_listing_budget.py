"""The listing itself is budgeted per tenant (``budget.Windows``): a poll looks at most
``entries`` of one tenant's folder entries, resuming where the last poll stopped, while
a tenant with fewer entries is listed whole on every poll; a log is taken as deleted
only after it is absent from the listings that looked where it would be."""

from __future__ import annotations

import io
import os

from watch_hostile_util import append, line

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore, walk
from evalstop.integrations.watch.budget import Budget

FILES, CAP = 40, 10


def _setup(tmp_path, monkeypatch):
    for f in range(FILES):
        append(str(tmp_path / f"logs/flood/d{f // 7}/r{f:03d}.jsonl"), line(f"f{f}", 1, 0.5))
    (tmp_path / "logs/quiet").mkdir()
    src = JsonlDirSource(str(tmp_path / "logs"), budget=Budget(entries=CAP))
    looked: list[list[str]] = []
    real = walk.walk

    def spy(root, admit=None):
        got = real(root, admit)
        looked.append([e.rel for e in got.entries])
        return got

    monkeypatch.setattr(walk, "walk", spy)
    err = io.StringIO()
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], detector="evalstop:k=100",
                     err=err, out=io.StringIO())
    return ctl, looked, err


def test_a_poll_lists_one_window_of_a_big_tenant_and_all_of_a_small_one(tmp_path,
                                                                       monkeypatch):
    ctl, looked, _ = _setup(tmp_path, monkeypatch)
    quiet = str(tmp_path / "logs/quiet/run.jsonl")
    for step in range(1, 9):
        append(quiet, line("q", step, 0.5))
        res = ctl.poll_once()
        assert [r.step for r in res.fed if r.job == "q"] == [step]  # read every poll
        flood = [r for r in looked[-1] if r.startswith("flood/")]
        assert len(flood) <= CAP
    seen = {r for poll in looked for r in poll if r.startswith("flood/")}
    assert len(seen) == FILES  # every entry looked at, over several polls
    tenants = [j.tenant for j in ctl.store.jobs().values()]
    assert tenants.count("flood") == FILES
    ctl.close()


def test_deletion_needs_listings_that_looked_there(tmp_path, monkeypatch):
    ctl, _looked, err = _setup(tmp_path, monkeypatch)
    for _ in range(FILES // CAP + 1):
        ctl.poll_once()  # every log read once
    gone = str(tmp_path / "logs/flood/d0/r000.jsonl")
    os.remove(gone)
    for _ in range(4):  # 4 polls, at most one looks where the log was: not deleted yet
        ctl.poll_once()
    assert "log deleted" not in err.getvalue()
    assert gone in ctl.sources[0].offsets
    for _ in range(3 * (FILES // CAP + 1)):  # 3 full cycles: absent from 3 listings there
        ctl.poll_once()
    assert err.getvalue().count("log deleted") == 1
    assert gone not in ctl.sources[0].offsets
    ctl.close()
