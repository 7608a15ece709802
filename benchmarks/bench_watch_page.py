"""Benchmark the status page's cost bound: 8 concurrent page loads at 50,000 jobs.

Builds a state database of JOBS jobs with EVALS evals each, then starts the page server
(``StatusServer`` with ``status.page_html``, as ``evalstop watch --serve`` does) in a
fresh process per setting and loads the page CONCURRENT times at once. Prints, per
setting, the server process's resident memory when idle (after one warm-up load of a
one-job page) and its peak (``VmHWM``) over the concurrent loads, and the wall time of the
concurrent loads.

Settings: ``--page-size`` jobs per page (the default page), and the whole fleet on one
page (``per_page = JOBS``: what the page cost before it was paginated).

Not a test: memory and timings depend on the machine (a shared 2-core box here).

    python benchmarks/bench_watch_page.py [--jobs 50000] [--evals 20] [--concurrent 8]
                                          [--page-size 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from evalstop.integrations.watch.store import ActionRow, JobRow, StateStore

_SERVER = r"""
import sys
from evalstop.integrations.watch.http_guard import ServeLimits
from evalstop.integrations.watch.observe import Health, StatusServer
from evalstop.integrations.watch.status import page_html
db, per_page = sys.argv[1], int(sys.argv[2])
srv = StatusServer("127.0.0.1", 0, metrics=None, health=Health(1.0),
                   page=lambda n: page_html(db, page=n, per_page=per_page),
                   limits=ServeLimits(read_timeout=600)).start()
print(srv.address[1], flush=True)
sys.stdin.read()
"""


def build(db: str, jobs: int, evals: int) -> None:
    store = StateStore(db)
    for lo in range(0, jobs, 5000):
        rows, acts, pts = [], [], []
        for i in range(lo, min(lo + 5000, jobs)):
            src, job = f"/logs/t{i % 50}/run{i % 7}.jsonl", f"job-{i:06d}"
            stopped = i % 5 == 0
            rows.append(JobRow(job, src, f"t{i % 50}", {"rule": {"streak": 1}}, evals, evals,
                               0.4, 3, 0.6, stopped, evals if stopped else None,
                               "2 declines" if stopped else "", 0, 0.0))
            if stopped:
                acts.append(ActionRow(src, job, f"t{i % 50}", f"scancel {job}", "done", 0,
                                      "x" * 500, 0.0, 0.0, 0.0))
            pts += [(src, job, s * 100, 0.5 + 0.01 * ((s * 7 + i) % 11)) for s in range(evals)]
        store.save_batch(rows, {}, [], acts, pts)
    store.close()


def status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def measure(db: str, per_page: int, concurrent: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, db, str(per_page)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = f"http://127.0.0.1:{int(proc.stdout.readline())}/"
        urllib.request.urlopen(url + "?page=999999", timeout=600).read()  # warm, ~no rows
        idle = status_kb(proc.pid, "VmRSS")
        sizes: list[int] = []

        def load() -> None:
            with urllib.request.urlopen(url, timeout=600) as r:
                sizes.append(len(r.read()))

        threads = [threading.Thread(target=load) for _ in range(concurrent)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        return {"idle_mb": idle / 1024, "peak_mb": status_kb(proc.pid, "VmHWM") / 1024,
                "wall_s": wall, "page_mb": max(sizes) / 2**20}
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=50_000)
    ap.add_argument("--evals", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--page-size", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "state.db")
        t0 = time.perf_counter()
        build(db, args.jobs, args.evals)
        print(f"state: {args.jobs} jobs x {args.evals} evals, built in "
              f"{time.perf_counter() - t0:.1f} s; load average {os.getloadavg()[0]:.2f}")
        for label, per_page in ((f"paginated, {args.page_size} jobs/page", args.page_size),
                                ("whole fleet on one page", args.jobs)):
            m = measure(db, per_page, args.concurrent)
            print(f"{label}: {args.concurrent} concurrent loads: idle {m['idle_mb']:.0f} MB, "
                  f"peak {m['peak_mb']:.0f} MB (+{m['peak_mb'] - m['idle_mb']:.0f} MB), "
                  f"page {m['page_mb']:.2f} MB, {m['wall_s']:.2f} s wall")


if __name__ == "__main__":
    main()
