"""Every command of README.md, and of the docs' blocks marked runnable, runs as written.

A fresh-clone walk: each block runs in its own temporary folder that holds the checkout's
``src/`` and ``examples/`` (linked) and the small inputs the pages assume (``jobs.csv``,
``runs.jsonl``), under ``bash -eo pipefail``, with ``evalstop`` and ``python`` on PATH being
this checkout's. Markers: see ``tests/docs_commands.py`` and docs/development.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_commands import IN_SEQUENCE, ROOT, all_blocks, blocks

# The small inputs the pages' examples name, as a reader would have them.
INPUTS = {
    "jobs.csv": "job_id,arrival_s,duration_s,gpus,type\n"
                "j0,0,3600,8,rlhf\nj1,60,7200,4,lora\nj2,120,1800,16,rlhf\nj3,600,5400,8,dpo\n",
    # the example of docs/simulator.md: two jobs, interleaved, out of step order
    "runs.jsonl": "".join(line + "\n" for line in (
        '{"job": "a", "step": 1, "eval": 0.1}', '{"job": "b", "step": 1, "eval": 0.4}',
        '{"job": "a", "step": 2, "eval": 0.3}', '{"job": "b", "step": 3, "eval": 0.6}',
        '{"job": "a", "step": 3, "eval": 0.2}', '{"job": "b", "step": 2, "eval": 0.5}',
        '{"job": "a", "step": 4, "eval": 0.15}')),
}
TIMEOUT_S = 240  # a guard against a hang, not a speed target
RUN = [b for b in all_blocks()
       if b.marker in ("runnable", "runnable as:") and b.page not in IN_SEQUENCE]


def _folder(tmp_path: Path) -> tuple[Path, dict]:
    work = tmp_path / "walk"
    work.mkdir()
    for name in ("src", "examples"):
        (work / name).symlink_to(ROOT / name)
    for name, text in INPUTS.items():
        (work / name).write_text(text)
    # `evalstop` and `python` are this checkout's, whatever an installed script points at.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "evalstop").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m evalstop "$@"\n')
    (bin_dir / "evalstop").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    return work, env


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.where)
def test_a_runnable_block_runs_as_written(tmp_path, block):
    work, env = _folder(tmp_path)
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", block.script()], cwd=work, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, (
        f"{block.where} failed (exit {proc.returncode}):\n{block.script()}\n"
        f"--- stderr ---\n{proc.stderr[-3000:]}")


SHOWN = [b for b in RUN if b.marker == "runnable" and b.transcript()]


@pytest.mark.parametrize("block", SHOWN, ids=lambda b: b.where)
def test_the_output_a_block_shows_is_what_its_command_prints(tmp_path, block):
    work, env = _folder(tmp_path)
    for command, shown in block.transcript():
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=work, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        assert proc.returncode == 0, f"{block.where}: {command!r} failed:\n{proc.stderr[-2000:]}"
        if shown:
            assert proc.stdout.splitlines() == shown, (
                f"{block.where}: {command!r} prints something else than the page shows")


def test_every_readme_command_is_run_or_says_why_not():
    """A new command in the README runs in CI unless its block says why it cannot."""
    readme = blocks(ROOT / "README.md")
    assert readme
    unmarked = [b.where for b in readme if b.marker is None]
    assert not unmarked, f"shell blocks without a marker (tests/docs_commands.py): {unmarked}"
    assert all(b.argument for b in readme if b.marker in ("runnable as:", "not runnable:"))
    assert sum(b.marker in ("runnable", "runnable as:") for b in readme) >= 3


def test_the_docs_home_page_runs_the_readmes_commands():
    """The site's front page repeats the README's two commands: the same text."""
    def commands(path):
        return [b.text for b in blocks(path)][:2]

    assert commands(ROOT / "docs" / "index.md") == commands(ROOT / "README.md")


def test_the_markers_are_read(tmp_path, monkeypatch):
    import docs_commands

    monkeypatch.setattr(docs_commands, "ROOT", tmp_path)
    page = tmp_path / "p.md"
    page.write_text("<!-- runnable -->\n```bash\n$ echo a \\\n  b\nout\n$ true\n```\n"
                    "<!-- runnable as: echo small -->\n```sh\nlong thing\n```\n"
                    "```bash\nunmarked\n```\n```python\nnot shell\n```\n")
    got = docs_commands.blocks(page)
    assert [(b.marker, b.line) for b in got] == [("runnable", 2), ("runnable as:", 9),
                                                 (None, 12)]
    assert got[0].script() == "echo a \\\n  b\ntrue"
    assert got[1].script() == "echo small"
    assert got[0].transcript() == [("echo a \\\n  b", ["out"]), ("true", [])]
