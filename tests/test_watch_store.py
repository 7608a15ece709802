"""The state database under another process's hold: SQLite's EXCLUSIVE locking mode is
waited out for a bounded, stated time; a file whose tables hold other types is one line."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from evalstop.cli.main import main
from evalstop.integrations.watch.store import StateStore


def hold_exclusive(db: str) -> sqlite3.Connection:
    """A connection that keeps ``db`` locked (EXCLUSIVE locking mode, after a write)."""
    con = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA locking_mode=EXCLUSIVE")
    con.execute("CREATE TABLE IF NOT EXISTS other(x)")
    con.execute("INSERT INTO other VALUES (1)")  # takes the exclusive lock, keeps it
    return con


def test_an_exclusive_hold_released_later_is_waited_out(tmp_path):
    db = str(tmp_path / "s.db")
    con = hold_exclusive(db)
    said: list[str] = []
    threading.Timer(6.5, con.close).start()  # past SQLite's own 5 s wait, once fatal
    t0 = time.monotonic()
    store = StateStore(db, on_wait=said.append)
    assert time.monotonic() - t0 >= 6.0
    assert store.jobs() == {}
    store.close()
    assert len(said) == 1 and "waiting up to 60 s" in said[0]


def test_an_exclusive_hold_that_stays_is_one_line_after_the_stated_wait(tmp_path):
    db = str(tmp_path / "s.db")
    con = hold_exclusive(db)
    try:
        t0 = time.monotonic()
        with pytest.raises(ValueError, match=r"stayed locked by another process .*gave up "
                                             r"after 0.5 s"):
            StateStore(db, busy_ms=100, start_wait=0.5)
        assert time.monotonic() - t0 < 5
    finally:
        con.close()


def make_state(tmp_path) -> str:
    db = str(tmp_path / "s.db")
    StateStore(db).close()
    return db


@pytest.mark.parametrize("sql, column", [
    ("INSERT INTO jobs VALUES ('/l/a','j','a','{}','many',NULL,NULL,NULL,NULL,0,NULL,'',0,0)",
     "column n_evals holds TEXT, not INTEGER"),
    ("INSERT INTO jobs VALUES ('/l/a','j','a','[1]',1,NULL,NULL,NULL,NULL,0,NULL,'',0,0)",
     "a saved state that is not a JSON object"),
    ("INSERT INTO jobs VALUES ('/l/a','j','a','{',1,NULL,NULL,NULL,NULL,0,NULL,'',0,0)",
     "a saved state that is not a JSON object"),
    ("INSERT INTO jobs VALUES ('/l/a','j','a','{}',1,'x',NULL,NULL,NULL,0,NULL,'',0,0)",
     "column last_step holds TEXT, not INTEGER"),
    ("INSERT INTO actions VALUES ('/l/a','j','a','true','pending',0,x'00',0,0,0)",
     "column output holds BLOB, not TEXT"),
])
def test_wrong_column_types_are_one_line(tmp_path, capsys, sql, column):
    db = make_state(tmp_path)
    con = sqlite3.connect(db)
    con.execute(sql)
    con.commit()
    con.close()
    assert main(["watch", "--status", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert column in err and "not an evalstop watch state" in err
    (tmp_path / "logs").mkdir()
    assert main(["watch", "--once", "--jsonl", str(tmp_path / "logs"), "--db", db]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and column in err


def test_the_cli_says_it_waits_for_a_locked_state(tmp_path):
    import os
    import subprocess
    import sys

    db = str(tmp_path / "s.db")
    con = hold_exclusive(db)
    (tmp_path / "logs").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "evalstop.cli.main", "watch", "--once",
                             "--jsonl", str(tmp_path / "logs"), "--db", db],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stderr.readline()  # said while it waits, before any result
        assert "state database is locked" in first and "waiting up to 60 s" in first
    finally:
        con.close()
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in rest
