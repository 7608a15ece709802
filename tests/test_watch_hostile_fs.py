"""Hostile tenants, findings 4-6 of issue 10: one controller per database (through a
symlink too) and compare-and-set transitions; symlinks out of the watched root; rotation
and truncate-and-rewrite lose nothing; a locked database is waited out; an action
timeout kills the whole process group; a slow action does not delay detection; the
status view escapes names."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time

import pytest
from watch_hostile_util import Site, append, declining, line

from evalstop.integrations.watch import ShellAction, StateStore
from evalstop.integrations.watch.status import format_table, status_rows


# ---- finding 4: two controllers, one database ----------------------------------------------
def test_second_controller_through_a_symlink_is_refused(tmp_path):
    site = Site(tmp_path)
    os.symlink(site.db, tmp_path / "alias.db")
    with pytest.raises(ValueError, match="another evalstop watch holds"):
        StateStore(str(tmp_path / "alias.db"))
    os.link(site.db, tmp_path / "hard.db")
    with pytest.raises(ValueError, match="another evalstop watch holds"):
        StateStore(str(tmp_path / "hard.db"))
    site.ctl.close()


def test_action_transitions_are_compare_and_set(tmp_path):
    site = Site(tmp_path, action=ShellAction(f"echo {{job}} >> {tmp_path / 'acts.txt'}"))
    append(site.path("good/run.jsonl"), declining())
    site.ctl.run_pending = lambda: 0  # decide, but do not start
    site.ctl.poll_once()
    (row,) = site.ctl.store.actions("pending")
    # Someone else (another process on this state) took it first: ours must not run it.
    other = sqlite3.connect(site.db)
    other.execute("UPDATE actions SET status='running'")
    other.commit()
    other.close()
    del site.ctl.run_pending
    assert site.ctl.run_pending() == 0
    assert not site.ctl.store.set_action(row.source, row.job, "running", expect="pending")
    site.ctl.drain()
    assert site.acts() == []
    site.ctl.close()


# ---- finding 5: symlinks ---------------------------------------------------------------------
def test_symlinks_out_of_the_root_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(declining("SECRET-JOB") + b"root:$6$hash:::\n")
    site = Site(tmp_path)
    (site.root / "evil").mkdir()
    os.symlink(outside / "secret.jsonl", site.root / "evil" / "link.jsonl")
    os.symlink(outside, site.root / "evil" / "dirlink")
    os.symlink("/etc/shadow", site.root / "evil" / "shadow.jsonl")
    os.mkfifo(site.root / "evil" / "fifo.jsonl")  # would block a reader forever
    append(site.path("good/run.jsonl"), declining())
    res = site.ctl.run_until_idle()[0]
    assert site.stopped() == {("good", "train"): 5}
    assert res.refused == {"symlink": 3, "special": 1}  # the FIFO: refused, never opened
    err = site.err.getvalue()
    assert err.count("not a regular file (a FIFO or device); not read") == 1
    assert err.count("symbolic link; not followed") == 3
    assert "SECRET" not in err and "root:" not in err
    assert {j.job for j in site.ctl.store.jobs().values()} == {"train"}
    site.ctl.run_until_idle()
    assert site.err.getvalue().count("not followed") == 3  # logged once
    site.ctl.close()


def test_file_swapped_for_a_symlink_after_listing_is_not_read(tmp_path, monkeypatch):
    outside = tmp_path / "secret.jsonl"
    outside.write_bytes(declining("SECRET"))
    site = Site(tmp_path)
    victim = site.path("evil/x.jsonl")
    append(victim, line("mine", 1, 0.5))
    src = site.ctl.sources[0]
    real = src._files

    def swap(batch):  # the tenant wins the race between listing and opening
        out = real(batch)
        os.remove(victim)
        os.symlink(outside, victim)
        return out
    monkeypatch.setattr(src, "_files", swap)
    site.ctl.poll_once()
    assert {j.job for j in site.ctl.store.jobs().values()} == set()
    site.ctl.close()


# ---- finding 6: lost or stalled work --------------------------------------------------------
def test_rotation_and_truncation_lose_no_record(tmp_path):
    site = Site(tmp_path)
    log = site.path("t/a.jsonl")
    recs = [line("r", s, float(s)) for s in range(1, 31)]  # rising: never stopped
    append(log, b"".join(recs[0:5]))
    site.ctl.poll_once()
    append(log, b"".join(recs[5:8]))             # written, then rotated before a poll
    os.rename(log, log + ".1")
    append(log, b"".join(recs[8:12]))            # the new a.jsonl
    site.ctl.poll_once()
    append(log + ".1", b"".join(recs[12:13]))    # a late write to the rotated file
    site.ctl.poll_once()
    # Truncated and rewritten past its old size between polls.
    with open(log, "wb") as fh:
        fh.write(b"".join(recs[13:22]))
    site.ctl.poll_once()
    site.restart()  # a restart in between changes nothing
    os.rename(log + ".1", log + ".2")
    os.rename(log, log + ".1")
    append(log + ".1", b"".join(recs[22:25]))
    append(log, b"".join(recs[25:30]))
    site.ctl.run_until_idle()
    (job,) = site.ctl.store.jobs().values()
    err = site.err.getvalue()
    assert (job.n_evals, job.last_step, job.skipped) == (30, 30, 0), err
    assert "already taken" not in err  # nothing was fed twice
    site.ctl.close()


def test_rewritten_log_is_read_from_the_start(tmp_path):
    site = Site(tmp_path)
    log = site.path("t/a.jsonl")
    append(log, line("r", 1, 0.1) + line("r", 2, 0.2))
    site.ctl.poll_once()
    with open(log, "wb") as fh:  # same inode, longer than before, different bytes
        fh.write(line("r", 3, 0.3) + line("r", 4, 0.4) + line("r", 5, 0.5))
    site.ctl.run_until_idle()
    assert "log rewritten; reading it from the start" in site.err.getvalue()
    (job,) = site.ctl.store.jobs().values()
    assert (job.n_evals, job.last_step) == (5, 5)
    site.ctl.close()


def test_locked_database_is_waited_out(tmp_path):
    site = Site(tmp_path, busy_ms=50)
    append(site.path("good/run.jsonl"), declining())
    other = sqlite3.connect(site.db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")  # e.g. a backup holding the database
    threading.Timer(0.6, lambda: other.execute("COMMIT")).start()
    site.ctl.run_until_idle()
    assert site.stopped() == {("good", "train"): 5}
    assert site.ctl.store.waits >= 1
    assert site.err.getvalue().count("state database is locked") == 1
    other.close()
    site.ctl.close()


def test_action_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    action = ShellAction(f"sleep 60 & echo $! > {pidfile}; wait", timeout=0.5)
    result = action.run(action.template)
    assert result.rc == 124 and "every process it started was killed" in result.output
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        pytest.fail("the action's child outlived the timeout")


def test_slow_action_does_not_delay_detection(tmp_path):
    action = ShellAction(f"sleep 3; echo {{job}} >> {tmp_path / 'acts.txt'}")
    site = Site(tmp_path, action=action, workers=2)
    append(site.path("a/run.jsonl"), declining("slow"))
    site.ctl.poll_once()  # stops "slow"; its 3 s action starts in the pool
    append(site.path("b/run.jsonl"), declining("next"))
    t0 = time.monotonic()
    res = site.ctl.poll_once()
    assert time.monotonic() - t0 < 2.0  # not behind the 3 s action
    assert [k.name for k in res.stops] == ["next"]
    site.ctl.drain()
    assert sorted(site.acts()) == ["next", "slow"]
    assert all(a.status == "done" for a in site.ctl.store.actions())
    site.ctl.close()


def test_status_escapes_names(tmp_path):
    site = Site(tmp_path)
    # A bidi override (category Cf) is refused at intake; a literal backslash sequence
    # is accepted and shown escaped, so it cannot pose as a real escape either.
    append(site.path("good/run.jsonl"), declining("a\u202eb"))
    append(site.path("good/run.jsonl"), declining("x\\ny"))
    site.ctl.run_until_idle()
    assert site.ctl.refused == {"name": 5}
    table = format_table(status_rows(site.ctl.store))
    lines = table.splitlines()
    assert len(lines) == 3 and all(line.isprintable() for line in lines)
    assert "x\\\\ny" in lines[1]  # the backslash doubled
    site.ctl.close()


def test_status_escapes_what_a_database_holds(tmp_path):
    site = Site(tmp_path)
    append(site.path("good/run.jsonl"), declining())
    site.ctl.run_until_idle()
    site.ctl.close()
    con = sqlite3.connect(site.db)  # e.g. state written by an older version
    con.execute("UPDATE jobs SET job=?", ("evil\x1b[2J\nname",))
    con.commit()
    con.close()
    store = StateStore(site.db, readonly=True)
    rows = status_rows(store)
    table = format_table(rows)
    store.close()
    assert "\x1b" not in table and "evil\\x1b[2J\\nname" in table
    assert json.loads(json.dumps(rows[0]))["job"] == "evil\x1b[2J\nname"


def test_a_reused_inode_does_not_carry_identity_across_tenants(tmp_path):
    site = Site(tmp_path)
    append(site.path("a/run.jsonl"), declining("j", [0.1, 0.2]))
    site.ctl.poll_once()
    # The same inode moved under another tenant (as a reused inode number would look).
    os.mkdir(site.path("b"))
    os.rename(site.path("a/run.jsonl"), site.path("b/run.jsonl"))
    append(site.path("b/run.jsonl"), line("j", 3, 0.3))
    site.ctl.run_until_idle()
    got = {(j.tenant, j.job): j.n_evals for j in site.ctl.store.jobs().values()}
    assert got == {("a", "j"): 2, ("b", "j"): 3}  # b's log is b's, read from its start
    site.ctl.close()
