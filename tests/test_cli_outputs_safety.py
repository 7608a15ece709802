"""Issue 10, finding 7: what the CLIs write, and what they read, under hostile conditions.

Each test reproduces one reported problem: a device node or symlink given as ``--out``
was replaced; a full disk left ``detectors.json`` cut in half with an error naming no
file; a killed ``reproduce`` left old and new results mixed; killing ``reproduce`` or
``lab corpus`` left its workers running; a single enormous line was read whole.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import tracemalloc

import psutil
import pytest

from evalstop.cli.main import main
from evalstop.fileio import atomic_write

TRACE = "job_id,arrival_s,duration_s,gpus\na,0,10,1\nb,5,20,1\n"


def _one_line_error(capsys, rc, *needles):
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("evalstop: error: "), err
    for needle in needles:
        assert needle in err, err
    return err


def _special(tmp_path, kind):
    """A thing at tmp_path/'out' that is not a regular file; returns (path, check) where
    check() asserts it is still there, unchanged."""
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    p = tmp_path / "out"
    if kind == "symlink":
        p.symlink_to(target)
    elif kind == "dangling symlink":
        p.symlink_to(tmp_path / "nowhere")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("creating a device node needs root")
        os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a private /dev/null
    mode = os.lstat(p).st_mode

    def check():
        assert os.lstat(p).st_mode == mode
        assert target.read_text() == "keep me\n"
        if kind == "symlink":
            assert os.readlink(p) == str(target)
    return p, check


KINDS = ("symlink", "dangling symlink", "fifo", "device")
WHAT = {"symlink": "is a symbolic link", "dangling symlink": "is a symbolic link",
        "fifo": "is a FIFO", "device": "is a device node"}


# --- 1. anything that is not a regular file is refused, before any work ----------------

@pytest.mark.parametrize("kind", KINDS)
def test_simulate_refuses_to_replace_a_special_out(tmp_path, capsys, monkeypatch, kind):
    out, unchanged = _special(tmp_path, kind)
    (tmp_path / "jobs.csv").write_text(TRACE)
    monkeypatch.setattr("evalstop.cli.simulate.simulate",
                        lambda *a, **k: pytest.fail("simulated before checking --out"))
    rc = main(["simulate", "--jobs", str(tmp_path / "jobs.csv"), "--gpus", "2",
               "--scheduler", "fifo", "--out", str(out)])
    _one_line_error(capsys, rc, "--out", WHAT[kind], "refusing to replace it")
    unchanged()


@pytest.mark.parametrize("command", [
    ["reproduce", "--quick", "--only", "main", "--no-detectors"],
    ["bench-detectors", "--quick"],
    ["lab", "corpus", "--pairs", "10", "--betas", "0", "--seeds", "1", "--steps", "30"],
])
def test_folder_outputs_refuse_a_symlink(tmp_path, capsys, monkeypatch, command):
    real = tmp_path / "elsewhere"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    for target in ("evalstop.cli.reproduce.run_experiments",
                   "evalstop.detbench.run_detector_benchmark", "evalstop.lab.generate.generate"):
        monkeypatch.setattr(target, lambda *a, **k: pytest.fail("worked before checking --out"))
    rc = main([*command, "--out", str(tmp_path / "out")])
    _one_line_error(capsys, rc, "is a symbolic link, not a folder")
    assert os.readlink(tmp_path / "out") == str(real) and list(real.iterdir()) == []


def test_atomic_write_refuses_a_symlink_inside_an_output_folder(tmp_path):
    # A file planted in an output folder (detectors/detectors.json -> elsewhere) is not
    # replaced either: the library function raises an OSError naming the file.
    (tmp_path / "precious").write_text("keep me\n")
    (tmp_path / "detectors.json").symlink_to(tmp_path / "precious")
    with pytest.raises(OSError, match="symbolic link") as info:
        with atomic_write(tmp_path / "detectors.json") as fh:
            fh.write("new")
    assert info.value.filename == str(tmp_path / "detectors.json")
    assert (tmp_path / "detectors.json").is_symlink()
    assert (tmp_path / "precious").read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["detectors.json", "precious"]


# --- 2. a full disk: one line naming the file, the previous file intact -----------------

class _FullDisk:
    """A file whose writes fail with ENOSPC once ``room`` bytes were written."""

    def __init__(self, fh, room):
        self._fh, self._room = fh, room

    def write(self, data):
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._room -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def _disk_full_after(monkeypatch, room):
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: _FullDisk(real(*a, **k), room))


def test_simulate_on_a_full_disk_names_the_file_and_keeps_the_old_one(tmp_path, capsys,
                                                                       monkeypatch):
    (tmp_path / "jobs.csv").write_text(TRACE)
    out = tmp_path / "per_job.csv"
    out.write_text("the previous results\n")
    _disk_full_after(monkeypatch, 40)  # the header fits, the first row does not
    rc = main(["simulate", "--jobs", str(tmp_path / "jobs.csv"), "--gpus", "2",
               "--scheduler", "fifo", "--out", str(out)])
    _one_line_error(capsys, rc, f"{out}: cannot write (No space left on device)")
    assert out.read_text() == "the previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv", "per_job.csv"]


def test_bench_detectors_on_a_full_disk_keeps_the_old_detectors_json(tmp_path, capsys,
                                                                      monkeypatch):
    # It used to write detectors.json in place: a full disk cut it in half.
    out = tmp_path / "bench"
    out.mkdir()
    old = json.dumps({"previous": "run"}) + "\n"
    (out / "detectors.json").write_text(old)
    _disk_full_after(monkeypatch, 4096)
    rc = main(["bench-detectors", "--quick", "--runs", "1", "--no-progress", "--out", str(out)])
    _one_line_error(capsys, rc, f"{out / 'detectors.json'}: cannot write (No space left")
    assert (out / "detectors.json").read_text() == old
    assert [p.name for p in out.iterdir()] == ["detectors.json"]  # no temporary left


# --- 3. reproduce: a fresh folder swapped in, never old and new mixed --------------------

QUICK_MAIN = ["reproduce", "--quick", "--only", "main", "--seeds", "2", "--workers", "1",
              "--no-progress", "--no-detectors"]


def _old_results(out):
    out.mkdir()
    (out / "results.json").write_text('{"old": true}\n')
    (out / "k_runs.csv").write_text("old\n")
    return {p.name: p.read_text() for p in out.iterdir()}


def test_reproduce_failing_half_way_leaves_the_old_folder_as_it_was(tmp_path, capsys,
                                                                     monkeypatch):
    out = tmp_path / "res"
    before = _old_results(out)
    import evalstop.report

    def boom(runs, out_dir, *a, **k):  # some files written, then the disk fills up
        (out_dir / "main_runs.csv").write_text("new\n")
        raise OSError(errno.ENOSPC, "No space left on device", str(out_dir / "report.md"))
    monkeypatch.setattr(evalstop.report, "write_report", boom)
    rc = main([*QUICK_MAIN, "--out", str(out)])
    _one_line_error(capsys, rc, "report.md: No space left on device")
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # the new folder is gone


def test_reproduce_replaces_the_old_folder_whole(tmp_path, capsys):
    out = tmp_path / "res"
    _old_results(out)
    assert main([*QUICK_MAIN, "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert "k_runs.csv" not in names and "main_runs.csv" in names and "INCOMPLETE" not in names
    assert json.loads((out / "results.json").read_text())["experiments"].keys() == {"main"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    assert f"report: {out / 'report.html'} (self-contained;" in capsys.readouterr().out


@pytest.mark.parametrize("setup, message", [
    (lambda d: (d / "res").mkdir() or (d / "res" / "notes.txt").write_text("mine"),
     "holds 'notes.txt', which this command did not write"),
    (lambda d: os.chdir(d / "res") if (d / "res").mkdir() is None else None,
     "holds the current folder"),
])
def test_reproduce_refuses_a_folder_it_would_delete_user_files_from(tmp_path, capsys,
                                                                    monkeypatch, setup, message):
    monkeypatch.chdir(tmp_path)
    setup(tmp_path)
    monkeypatch.setattr("evalstop.cli.reproduce.run_experiments",
                        lambda *a, **k: pytest.fail("ran the studies before checking --out"))
    rc = main([*QUICK_MAIN, "--out", str(tmp_path / "res")])
    _one_line_error(capsys, rc, message)
    assert (tmp_path / "res").is_dir()


def test_reproduce_removes_a_killed_runs_incomplete_folder(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "res.incomplete-0123abcd"
    stale.mkdir()
    (stale / "INCOMPLETE").write_text(f"pid {dead.pid}\n")
    live = tmp_path / "res.incomplete-4567abcd"  # another run still writing: left alone
    live.mkdir()
    (live / "INCOMPLETE").write_text(f"pid {os.getpid()}\n")
    assert main([*QUICK_MAIN, "--out", str(tmp_path / "res")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res", live.name]


# --- 4. killing the parent kills its workers --------------------------------------------

@pytest.fixture
def spawn():
    """Start a command; whatever it and its workers left running is killed afterwards,
    also when the test fails (on the old code, workers ran on for minutes)."""
    seen: list[psutil.Process] = []

    def start(argv, cwd):
        # SIGINT as a user's shell gives it: a suite run in the background (``cmd &``)
        # ignores SIGINT, and an ignored signal stays ignored in the child.
        proc = psutil.Popen([sys.executable, *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        seen.append(proc)
        return proc, seen
    yield start
    for p in seen:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(seen, timeout=5)


def _workers_of(proc, n, seen, timeout=90):
    """The child processes once ``n`` are up (imports take a while on a busy machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(proc.children(recursive=True)) >= n:
            time.sleep(0.5)  # let the pool finish starting the rest
            kids = proc.children(recursive=True)
            seen.extend(kids)
            return kids
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.1)
    pytest.fail(f"no {n} workers after {timeout} s")


def _gone(procs, timeout=10.0):
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p.pid for p in alive]


def test_parallel_map_workers_die_with_a_killed_parent(tmp_path, spawn):
    script = tmp_path / "pool.py"
    script.write_text(textwrap.dedent("""
        import time
        from evalstop.parallel import parallel_map

        def nap(x):
            time.sleep(120)

        if __name__ == "__main__":
            parallel_map(nap, range(4), workers=2, progress=False)
    """))
    proc, seen = spawn([str(script)], tmp_path)
    kids = _workers_of(proc, 2, seen)
    proc.kill()
    proc.wait(10)
    assert _gone(kids) == []


@pytest.mark.parametrize("sig, rc", [(signal.SIGKILL, -9), (signal.SIGTERM, 143),
                                     (signal.SIGINT, 130)])
def test_killed_reproduce_leaves_no_workers_and_no_mixed_folder(tmp_path, spawn, sig, rc):
    out = tmp_path / "res"
    before = _old_results(out)
    proc, seen = spawn(["-m", "evalstop.cli.main", "reproduce", "--quick", "--workers", "2",
                        "--no-progress", "--no-detectors", "--out", str(out)], tmp_path)
    kids = _workers_of(proc, 2, seen)
    proc.send_signal(sig)
    assert proc.wait(30) == rc
    assert _gone(kids) == []
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "res")
    if sig == signal.SIGKILL:  # no cleanup possible: the new folder stays, marked
        assert len(left) == 1 and left[0].startswith("res.incomplete-")
        assert (tmp_path / left[0] / "INCOMPLETE").is_file()
    else:
        assert left == []


def test_killed_lab_corpus_leaves_no_workers(tmp_path, spawn):
    pytest.importorskip("torch")
    proc, seen = spawn(["-m", "evalstop.cli.main", "lab", "corpus", "--pairs", "10", "--betas",
                        "0", "--seeds", "2", "--steps", "250", "--workers", "2",
                        "--no-progress", "--out", str(tmp_path / "runs")], tmp_path)
    kids = _workers_of(proc, 2, seen)
    proc.kill()
    proc.wait(10)
    assert _gone(kids) == []


# --- 5. an enormous line is refused, not read whole ----------------------------------------

LIMIT = 64 * 1024
BIG = 4 * 1024 * 1024  # a few MB stand in for 1 GB, against a lowered limit


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr("evalstop.lines.MAX_LINE_CHARS", LIMIT)


@pytest.mark.parametrize("command", [["replay"], ["noise"]])
def test_eval_log_with_an_enormous_line_is_one_line_error(tmp_path, capsys, small_limit,
                                                          command):
    log = tmp_path / "log.jsonl"
    log.write_text('{"job": "a", "step": 1, "eval": 0.5}\n' + "x" * BIG)
    rc = main([*command, str(log)])
    _one_line_error(capsys, rc, f"{log}: line 2 is longer than {LIMIT} characters")


def test_job_trace_with_an_enormous_line_is_one_line_error(tmp_path, capsys, small_limit):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(TRACE + "c," + "9" * BIG)
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", "2", "--scheduler", "fifo",
               "--out", str(tmp_path / "o.csv")])
    _one_line_error(capsys, rc, f"{jobs}: line 4 is longer than {LIMIT} characters")


@pytest.mark.parametrize("reader", ["evalstop.evallog:read_log",
                                    "evalstop.workload:read_job_csv",
                                    "evalstop.lab.corpus:read_curves"])
def test_an_enormous_line_is_never_held_in_memory(tmp_path, small_limit, reader):
    module, name = reader.split(":")
    read = getattr(__import__(module, fromlist=[name]), name)
    path = tmp_path / "big.jsonl"
    path.write_text("x" * BIG)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="line 1 is longer than"):
            read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BIG / 4, peak  # iterating the file would hold all 4 MB (x2 for str)
