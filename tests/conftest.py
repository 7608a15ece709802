"""Shared test helpers: small hand-built workloads with known answers."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from evalstop.workload.model import Workload


def make_workload(arrivals, durations, gpus, *, evals=None, n_evals=4, types=None,
                  hacking=None, true=None, est=None, losses=None):
    n = len(arrivals)
    grid = np.arange(1, n_evals + 1) / n_evals
    if evals is None:
        evals = np.tile(grid, (n, 1))  # strictly increasing: never stopped by k-decline
    evals = np.asarray(evals, dtype=float)
    m = evals.shape[1]
    grid = np.arange(1, m + 1) / m
    true = evals.copy() if true is None else np.asarray(true, dtype=float)
    return Workload(
        job_id=[f"j{i}" for i in range(n)],
        type=np.array(types if types is not None else ["rlhf"] * n),
        tenant=np.array(["t"] * n),
        gpus=np.asarray(gpus, dtype=np.int64),
        arrival_s=np.asarray(arrivals, dtype=float),
        duration_s=np.asarray(durations, dtype=float),
        est_duration_s=np.asarray(est if est is not None else durations, dtype=float),
        eval_progress=grid,
        eval_obs=evals,
        eval_true=true,
        proxy=np.tile(grid, (n, 1)),
        loss=(np.asarray(losses, dtype=float) if losses is not None
              else np.tile(1.0 - 0.5 * grid, (n, 1))),
        hacking=np.asarray(hacking if hacking is not None else [False] * n, dtype=bool),
        peak_progress=np.ones(n),
    )


def random_workload(seed, n):
    rng = np.random.default_rng(seed)
    evals = np.cumsum(rng.normal(0.01, 0.02, (n, 6)), axis=1)
    return make_workload(
        np.sort(rng.integers(0, 200, n)).astype(float),
        rng.integers(1, 100, n).astype(float),
        rng.integers(1, 5, n),
        evals=evals,
        est=rng.integers(1, 100, n).astype(float),
        losses=np.cumsum(-rng.random((n, 6)), axis=1) + 10,
        types=rng.choice(["lora", "dpo", "rlhf"], n),
    )


@pytest.fixture
def workload_factory():
    return make_workload


def load_benchmark(name: str):
    """A script of ``benchmarks/`` as a module (they are scripts, not a package)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_detector(det, values):
    """Feed ``values`` to ``det`` at steps 1..len; return (stop step or None, best step)."""
    for step, v in enumerate(values, start=1):
        if det.update(step, v).stop:
            return step, det.best_step
    return None, det.best_step


def watch_decisions(store):
    """Each watched job's (stopped, stop_step, best_step, evals), from the controller's store."""
    from evalstop.integrations.watch.status import status_rows

    return {r["job"]: (r["stopped"], r["stop_step"], r["best_step"], r["evals"])
            for r in status_rows(store)}


def kill_store(store):
    """What SIGKILL leaves of a controller: the uncommitted transaction is lost, the lock
    released."""
    if store.db.in_transaction:
        store.db.rollback()
    store.db.close()
    store._lock_fh.close()


SLURM_GPUS, SLURM_TENANTS = 8, ("a", "b", "c")


def require_slurm() -> None:
    """Skip the calling test module without Slurm; fail it under ``CI=true`` (CI installs
    Slurm, so a missing program there is a broken CI, not a reason to skip)."""
    from evalstop.testbed.cluster import missing_programs

    missing = missing_programs()
    if not missing:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must have Slurm (.ci/run installs it); missing {', '.join(missing)}",
                    pytrace=False)
    pytest.skip(f"no Slurm ({', '.join(missing)} not found; apt-get install -y slurm-wlm "
                "slurmdbd munge mariadb-server)", allow_module_level=True)


@pytest.fixture(scope="session")
def slurm_cluster():
    """One local Slurm (8 fake GPUs, accounts a, b, c) for every test module that needs
    one: a cluster start costs seconds of CI time, so the session pays for it once."""
    from evalstop.testbed.cluster import LocalCluster

    # Not under pytest's private (0700) temp folder: another user (the permission test's
    # `nobody`) must read slurm.conf and reach munge's socket.
    root = Path(tempfile.mkdtemp(prefix="evalstop-slurm-"))
    root.chmod(0o755)
    try:
        with LocalCluster(root, gpus=SLURM_GPUS, tenants=list(SLURM_TENANTS)) as c:
            yield c
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory):
    """This tree's wheel, installed in a venv (tests/wheel_venv.py), built once for the
    session's tests of the installed package."""
    import wheel_venv as wv

    return wv.build(tmp_path_factory.mktemp("wheel"))


# Under pytest-xdist (`-n 2 --dist loadgroup`, the default in pyproject.toml) each test goes
# to whichever worker is free, unless it carries an `xdist_group` mark: a group runs whole
# on one worker. Grouped here, by file:
# - "services": the files that start Ray or the Slurm testbed, real daemons. Ray: a file
#   with "ray" in its name or calling ray.init (each starts a Ray of its own). Slurm: the
#   testbed's files and every user of the session fixtures `slurm_cluster` and
#   `wheel_venv` (a session fixture is built once per worker that uses it). One worker runs
#   them one after another: their start-ups have deadlines and the two-node Ray test counts
#   the nodes that took tasks, and with the Slurm testbed's start beside it on two loaded
#   cores, all its tasks once went to one node.
# - the file itself: a file whose tests share a module- or class-scoped fixture (a server,
#   a simulated run, a browser's visit): split over two workers, both would build it.
# A new test file that starts a service, or holds a fixed port or path that other files
# use too, joins "services" in _starts_a_service; `-n 0` runs everything serially.
_RAY_FILE = re.compile(r"(^|_)ray(_|$)")
_SERVICE_FIXTURES = {"slurm_cluster", "wheel_venv"}


def _starts_a_service(path: Path, source: str, fixtures: set[str]) -> bool:
    return (bool(_RAY_FILE.search(path.stem)) or "ray.init(" in source
            or path.name.startswith("test_testbed") or bool(fixtures & _SERVICE_FIXTURES))


def _shares_a_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope in ("module", "class", "package"):
            return True
    return False


def xdist_group_of(item, source: str) -> str | None:
    """The worker group of ``item`` (None: any worker), ``source`` its file's text."""
    path = Path(str(item.path))
    fixtures = set(item.fixturenames)
    if _starts_a_service(path, source, fixtures):
        return "services"
    if _shares_a_module_fixture(item):
        return path.name
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items):
    sources: dict[Path, str] = {}
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue  # a test's own grouping wins
        path = Path(str(item.path))
        if path not in sources:
            sources[path] = path.read_text(errors="replace")
        group = xdist_group_of(item, sources[path])
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
