"""docs/testbed.md as a newcomer follows it: a wheel built from this tree (not an editable
install) in a fresh virtual environment (the session's: tests/wheel_venv.py), then every
runnable block of the page in page order, each in the environment the blocks before it left (``export SLURM_CONF=...``), in
an empty folder (nothing of the checkout on hand), the page's testbed folders moved
under a temporary one. Checked: every block exits 0; every job the controller stopped
is ``CANCELLED`` in sacct with EvalStop's note, none ``FAILED``; ``testbed down`` leaves
no process of the testbed.

Without Slurm the module skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest
from conftest import require_slurm
from docs_commands import ROOT, blocks

from evalstop.testbed import procs
from evalstop.testbed.cluster import LocalCluster

require_slurm()

PAGE = ROOT / "docs" / "testbed.md"
BLOCK_TIMEOUT_S = 420  # a guard against a hang: the page's replay takes about 90 s


def _env_after(script: str, env: dict, cwd: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run one block; the environment it leaves (its exports) for the next one."""
    dump = cwd / ".env-after"
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c",
                           f"{script}\nenv -0 > {dump}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False)
    if proc.returncode == 0 and dump.exists():
        env = dict(kv.split("=", 1) for kv in dump.read_text().split("\0") if "=" in kv)
        dump.unlink()
    return proc, env


@pytest.fixture(scope="module")
def walk(wheel_venv):
    base = Path(tempfile.mkdtemp(prefix="evalstop-docwalk-"))
    base.chmod(0o755)
    folders = [base / "tb", base / "tb64"]
    try:
        venv = wheel_venv.venv
        work = base / "walk"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SLURM_CONF")}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        where = subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import evalstop; print(evalstop.__file__)"], env=env,
                               cwd=work, capture_output=True, text=True, check=True)
        ran = []
        for block in blocks(PAGE):
            if block.marker not in ("runnable", "runnable as:"):
                continue
            # The page's /tmp/tb and /tmp/tb64, under this run's own folder.
            script = block.script().replace("/tmp/tb", str(base / "tb"))
            proc, env = _env_after(script, env, work)
            ran.append((block, proc))
        yield {"base": base, "work": work, "ran": ran, "wheel": wheel_venv.wheel, "venv": venv,
               "installed": Path(where.stdout.strip())}
    finally:
        for folder in folders:
            LocalCluster(folder, tenants=["x"]).down()
        shutil.rmtree(base, ignore_errors=True)


def test_the_page_runs_from_the_wheel_not_the_checkout(walk):
    assert walk["installed"].is_relative_to(walk["venv"]), walk["installed"]
    assert len(walk["ran"]) >= 6  # up, replay, the 64-GPU variant, what-if x2, down


def test_the_wheel_holds_the_slurm_action(walk):
    with zipfile.ZipFile(walk["wheel"]) as zf:
        assert "evalstop/actions/slurm.py" in zf.namelist()


def test_every_block_of_the_page_runs_in_order(walk):
    failed = [(b.where, p.returncode, p.stderr[-1500:]) for b, p in walk["ran"] if p.returncode]
    assert not failed, failed


def test_stops_are_enforced_and_cancelled_in_sacct(walk):
    from evalstop.integrations.watch.status import status_rows
    from evalstop.integrations.watch.store import StateStore
    from evalstop.testbed import measure
    from evalstop.testbed.replay import read_plan

    folder = walk["work"] / "runs" / "default" / "replay"
    run = read_plan(folder)
    recs = measure.records(folder / "sacct.txt", run.ids)
    store = StateStore(str(folder / "watch.db"), readonly=True)
    try:
        stopped = {r["job"] for r in status_rows(store) if r["stopped"]}
    finally:
        store.close()
    assert stopped, "the page's replay stops a-2 (it does in the simulator)"
    assert not [j for j, r in recs.items() if r.state == "FAILED"]
    for job in stopped:
        r = recs[job]
        assert r.state == "CANCELLED" and "stopped by EvalStop" in r.note, (job, r)


def test_down_leaves_no_process_of_the_testbed(walk):
    marker = str(walk["base"] / "tb") + "/"
    left = [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and int(e.name) != os.getpid()
            and procs.alive(int(e.name), marker)]
    assert left == [], [procs._proc_text(p, "cmdline") for p in left]
    assert procs.job_processes(walk["base"] / "tb") == []
