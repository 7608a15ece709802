"""Ray as the engine of ``parallel_map``: the same tasks, run as Ray tasks on a cluster.

``with ray_session(address):`` connects to a running cluster (``address``: what ``ray
start --head`` printed, ``host:port`` or ``ray://host:10001``) or, with ``address=None``,
starts a small local Ray (2 CPUs, no dashboard, 100 MB object store) and shuts it down
after. Inside the block every ``evalstop.parallel.parallel_map`` call runs its items as
Ray tasks instead of local processes, whatever its ``workers``: the callers (the
experiments' runner, the detector benchmark) do not change, and neither do their results,
which come back in input order (the tasks are pure functions of their item).

The evalstop package is shipped to the cluster with the job (``runtime_env`` ``py_modules``:
the installed package folder, data files included), so the cluster's nodes need only
evalstop's dependencies (numpy, scipy, tqdm, ... at the driver's versions), not evalstop.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import evalstop
from evalstop import parallel
from evalstop.progress import progress_bar

LOCAL_CPUS = 2
LOCAL_OBJECT_STORE = 100 * 1024 * 1024
# How long one ray.wait blocks before the loop looks again (Ctrl-C is seen in between).
WAIT_S = 1.0


def require_ray():
    """The ``ray`` module, or a ValueError (one line on the CLI) naming the extra."""
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs ray: pip install 'evalstop[ray]'") from None
    return ray


def runtime_env() -> dict:
    """What every task's worker gets: this evalstop package (source and data), so a remote
    node runs the driver's exact code. Byte-compiled files are left behind."""
    return {"py_modules": [str(Path(evalstop.__file__).parent)],
            "excludes": ["__pycache__", "*.pyc"]}


def _apply(fn: Callable, item: Any) -> tuple[str, Any]:
    """One task: ``fn(item)``, and the id of the node that ran it (for the run's summary)."""
    import ray

    return ray.get_runtime_context().get_node_id(), fn(item)


class RayEngine:
    """Runs ``parallel_map``'s items as Ray tasks; counts the tasks each node ran."""

    def __init__(self, ray):
        self.ray = ray
        self.remote = ray.remote(num_cpus=1, max_retries=0)(_apply)
        self.nodes: Counter[str] = Counter()  # node id -> tasks run there

    def map(self, fn: Callable, items: Sequence, *, progress: bool = True,
            desc: str = "working", unit: str = "task", done_before: int = 0) -> list:
        ray = self.ray
        out: list = [None] * len(items)
        fn_ref = ray.put(fn)
        # SPREAD: a big study's tasks (a million-job workload is gigabytes) go to every node
        # instead of queueing on the first one's free CPUs.
        pending = {self.remote.options(scheduling_strategy="SPREAD").remote(fn_ref, item): i
                   for i, item in enumerate(items)}
        bar = progress_bar(total=done_before + len(items), initial=done_before, desc=desc,
                           unit=unit, enabled=progress)
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=len(pending), timeout=WAIT_S,
                                   fetch_local=True)
                for ref in done:
                    try:
                        node, out[pending.pop(ref)] = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        # The task's own exception, so a bad input still reads as one line.
                        raise (exc.cause or exc) from None
                    self.nodes[node] += 1
                    bar.update()
        except BaseException:
            for ref in pending:  # a failure or Ctrl-C ends the run now, not after the rest
                ray.cancel(ref, force=True)
            raise
        finally:
            bar.close()
        return out

    def summary(self) -> str:
        n = sum(self.nodes.values())
        return f"{n} Ray task(s) on {len(self.nodes)} node(s)"


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[RayEngine]:
    """Ray as ``parallel_map``'s engine for the block; see the module docstring."""
    ray = require_ray()
    if ray.is_initialized():
        raise RuntimeError("Ray is already initialised in this process")
    env = runtime_env()
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
    else:
        ray.init(num_cpus=LOCAL_CPUS, include_dashboard=False,
                 object_store_memory=LOCAL_OBJECT_STORE, runtime_env=env,
                 log_to_driver=False)
    engine = RayEngine(ray)
    try:
        with parallel.engine(engine.map):
            yield engine
    finally:
        ray.shutdown()


def add_ray_option(parser) -> None:
    """``--ray [ADDRESS]`` for a command whose work goes through ``parallel_map``."""
    parser.add_argument(
        "--ray", nargs="?", const="", default=None, metavar="ADDRESS",
        help="run the tasks as Ray tasks: on the cluster at ADDRESS (host:port or "
             "ray://host:10001), or without ADDRESS on a local Ray started for the run "
             f"({LOCAL_CPUS} CPUs); results are the same as a local run's "
             "(needs evalstop[ray])")


def check_ray_option(args) -> None:
    """Before any work: ``--ray`` without ray installed is one line naming the extra."""
    if args.ray is not None:
        require_ray()


@contextlib.contextmanager
def engine_for(args) -> Iterator[RayEngine | None]:
    """``ray_session`` if the command line asked for Ray, else nothing (local processes)."""
    if args.ray is None:
        yield None
    else:
        with ray_session(args.ray or None) as engine:
            yield engine
