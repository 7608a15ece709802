"""Run independent pieces of work in worker processes, showing their progress.

One place for what the experiments and the lab corpus both need: results in input order,
``workers=1`` in this process (no pickling, easiest to debug), and a failure (or Ctrl-C)
that ends the run at once instead of after the queued rest: queued tasks are cancelled
and running workers killed, and workers die with their parent even when it is killed
(``evalstop.parent_death``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from evalstop.parent_death import die_with_parent
from evalstop.progress import progress_bar

# Another engine for every parallel_map call (evalstop.ray_engine sets Ray's for a run);
# None: local processes.
_ENGINE: Callable | None = None


@contextlib.contextmanager
def engine(map_fn: Callable) -> Iterator[None]:
    """Within the block, ``parallel_map`` hands its work to ``map_fn(fn, items, progress=,
    desc=, unit=, done_before=)``, which must return the results in input order."""
    global _ENGINE
    before, _ENGINE = _ENGINE, map_fn
    try:
        yield
    finally:
        _ENGINE = before


def check_workers(workers: Any) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    return workers


def parallel_map(fn: Callable, items: Sequence, *, workers: int, progress: bool = True,
                 desc: str = "working", unit: str = "task", done_before: int = 0) -> list:
    """``[fn(item) for item in items]``, spread over ``workers`` processes (``fn`` and the
    items must pickle). ``done_before`` starts the bar there, for resumed work."""
    check_workers(workers)
    if _ENGINE is not None:
        return _ENGINE(fn, items, progress=progress, desc=desc, unit=unit,
                       done_before=done_before)
    out: list = [None] * len(items)
    bar = progress_bar(total=done_before + len(items), initial=done_before, desc=desc,
                       unit=unit, enabled=progress)
    try:
        if workers == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                out[i] = fn(item)
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=min(workers, len(items)),
                                     initializer=die_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                futures: dict = {}
                try:
                    # Submitting is inside: workers start while the rest is queued, and a
                    # Ctrl-C then would leave the pool's exit to wait for every task.
                    for i, item in enumerate(items):
                        futures[pool.submit(fn, item)] = i
                    for fut in as_completed(futures):
                        out[futures[fut]] = fut.result()
                        bar.update()
                except BaseException:
                    stop_pool(pool)
                    raise
    finally:
        bar.close()
    return out


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and kill the running ones: ``shutdown`` alone waits for
    every running task (a lab run takes minutes) before an interrupted command can exit."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # gone after shutdown
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.kill()  # SIGKILL: a task cannot catch it and carry on
    for proc in procs:
        proc.join(timeout=5)
