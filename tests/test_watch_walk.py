"""No path outside the watched root, ever (``walk``): folders are opened relative to
their parent's descriptor without following links, so a tenant swapping its own
sub-folder for a symbolic link while the controller lists and reads cannot make it open
anything outside; FIFOs and devices are refused before a read; a listing error is told
from a deletion."""

from __future__ import annotations

import errno
import io
import os
import threading
import time

import pytest
from watch_hostile_util import append, declining, line

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore, walk


def _inode(path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_swapping_a_folder_for_a_link_never_reaches_outside(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    append(str(outside / "x.jsonl"), declining("SECRET"))
    forbidden = {_inode(outside), _inode(outside / "x.jsonl")}
    root = tmp_path / "logs"
    sub = root / "evil" / "sub"
    append(str(sub / "x.jsonl"), line("mine", 1, 0.5))
    append(str(root / "good" / "run.jsonl"), declining())
    opened_outside = []
    real_open = os.open

    def spy(path, flags, *a, **kw):
        fd = real_open(path, flags, *a, **kw)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) in forbidden:
            opened_outside.append(path)
        return fd
    monkeypatch.setattr(os, "open", spy)
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [JsonlDirSource(str(root))],
                     detector="evalstop:k=2", err=io.StringIO(), out=io.StringIO())
    stop = threading.Event()

    def swapper():  # the tenant, as fast as it can, for a bounded time
        real, link = str(sub), str(sub) + ".real"
        while not stop.is_set():
            os.rename(real, link)
            os.symlink(outside, real)
            time.sleep(0.001)  # each state held a moment, as a real tenant's would be
            os.remove(real)
            os.rename(link, real)
            time.sleep(0.001)
    t = threading.Thread(target=swapper)
    t.start()
    deadline = time.monotonic() + 3.0
    polls = 0
    try:
        while time.monotonic() < deadline:
            ctl.poll_once()
            polls += 1
    finally:
        stop.set()
        t.join()
    jobs = {(j.tenant, j.job) for j in ctl.store.jobs().values()}
    assert polls > 10
    assert opened_outside == []
    assert ("evil", "SECRET") not in jobs and ("good", "train") in jobs
    ctl.close()


def test_open_file_refuses_links_fifos_and_escapes(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    os.symlink(tmp_path / "d", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    os.close(walk.open_file(str(tmp_path), "d/f"))
    with pytest.raises(OSError) as link:
        walk.open_file(str(tmp_path), "link/f")
    assert link.value.errno in (errno.ELOOP, errno.ENOTDIR)
    with pytest.raises(walk.NotRegular):
        walk.open_file(str(tmp_path), "fifo")  # returns at once: never blocks
    for bad in ("../d/f", "d/../d/f", "/etc/passwd", "d//f"):
        with pytest.raises(OSError):
            walk.open_file(str(tmp_path), bad)


def test_a_listing_error_is_not_a_deletion(tmp_path, monkeypatch):
    root = tmp_path / "logs"
    append(str(root / "t" / "a.jsonl"), line("j", 1, 0.5))
    err = io.StringIO()
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [JsonlDirSource(str(root))],
                     detector="evalstop:k=2", err=err, out=io.StringIO())
    ctl.poll_once()
    real = os.scandir
    for code in (errno.EIO, errno.EMFILE):
        monkeypatch.setattr(os, "scandir", lambda fd, c=code: (_ for _ in ()).throw(
            OSError(c, os.strerror(c))))
        for _ in range(5):  # longer than MISSING_POLLS
            assert ctl.poll_once().stops == []
        monkeypatch.setattr(os, "scandir", real)
    append(str(root / "t" / "a.jsonl"), line("j", 2, 0.6))
    ctl.run_until_idle()
    text = err.getvalue()
    assert "deleted" not in text
    assert text.count("cannot list it (EIO") == 1
    assert text.count("out of file descriptors (raise the open-file limit") == 1
    (job,) = ctl.store.jobs().values()
    assert (job.n_evals, job.last_step) == (2, 2)  # offsets kept: nothing re-read or lost
    assert len(ctl.store.offsets()) == 1
    ctl.close()
