"""Input paths that are not regular files (a FIFO, a device) are refused before they are
opened for reading: opening a FIFO waits for a writer, for ever."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evalstop.errors import InputError
from evalstop.fileio import open_regular, read_regular


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


def evalstop(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "evalstop.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.mark.parametrize("argv", [
    ["watch", "--status", "--db", "FIFO"],
    ["watch", "--status", "--json", "--db", "FIFO"],
    ["watch", "--once", "--dry-run", "--jsonl", "logs", "--db", "FIFO"],
    ["watch", "--once", "--jsonl", "logs", "--db", "FIFO"],
    ["watch", "--policy", "FIFO", "--check-policy"],
    ["watch", "--once", "--jsonl", "logs", "--db", "s.db", "--serve", "0.0.0.0:0",
     "--serve-token-file", "FIFO"],
    ["replay", "FIFO"],
])
def test_a_fifo_as_an_input_is_one_line_not_a_hang(tmp_path, fifo, argv):
    (tmp_path / "logs").mkdir()
    proc = evalstop(*[fifo if a == "FIFO" else a for a in argv], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "is a FIFO (named pipe), not a regular file" in proc.stderr


def test_a_device_is_refused_too(tmp_path):
    with pytest.raises(InputError, match="'/dev/zero' is a device node, not a regular file"):
        read_regular("/dev/zero", "--policy", 1 << 20)


def test_regular_files_and_links_to_them_open(tmp_path):
    (tmp_path / "f").write_text("hello")
    (tmp_path / "link").symlink_to(tmp_path / "f")  # a Kubernetes ConfigMap is such links
    with open_regular(tmp_path / "link", "--policy", mode="r", encoding="utf-8") as fh:
        assert fh.read() == "hello"
    with pytest.raises(InputError, match="larger than 3 bytes"):
        read_regular(tmp_path / "f", "--policy", 3)
    with pytest.raises(InputError, match="cannot read --policy .*No such file"):
        read_regular(tmp_path / "nope", "--policy", 3)
