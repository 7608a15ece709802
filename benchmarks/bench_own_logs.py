"""How long ``evalstop reproduce --logs`` takes to read a platform's runs and replay the rules.

    nice python benchmarks/bench_own_logs.py [--runs 200] [--evals 200] [--seed 0]

Writes ``--runs`` runs of ``--evals`` evals (half of them hacking: a rise to 30% of the run,
then a fall) as one JSONL log, and a tenth as many as TensorBoard runs (tensorboard's own
writer) and as an MLflow SQLite store (MLflow's client), into a temporary folder; then
times ``read_own_runs`` per format and ``replay_rules`` (``none``, ``default``,
``evalstop:k=2``) on all of them, and prints the figures. Needs ``evalstop[watch,mlflow]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from evalstop.experiments.own_runs import replay_rules
from evalstop.workload.own_logs import read_own_runs


def _curves(rng: np.random.Generator, n: int, evals: int):
    t = np.linspace(0.0, 1.0, evals)
    for i in range(n):
        c = 0.5 + 0.3 * np.minimum(t / 0.3, 1.0)
        if i % 2 == 0:
            c -= np.where(t > 0.3, 0.6 * (t - 0.3), 0.0)
        yield f"run{i}", c + rng.normal(0.0, 0.01, evals)


def write_logs(root: Path, rng: np.random.Generator, runs: int, evals: int) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    (root / "jsonl").mkdir(parents=True)
    with open(root / "jsonl" / "runs.jsonl", "w") as fh:
        for job, c in _curves(rng, runs, evals):
            fh.writelines(json.dumps({"job": job, "step": s, "eval": float(v)}) + "\n"
                          for s, v in enumerate(c))
    for job, c in _curves(rng, max(2, runs // 10), evals):
        w = EventFileWriter(str(root / "tb" / job))
        for s, v in enumerate(c):
            w.add_event(event_pb2.Event(step=s, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag="eval", simple_value=float(v))])))
        w.close()
    (root / "mlflow").mkdir()
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow' / 'mlflow.db'}")
    exp = client.create_experiment("bench")
    for job, c in _curves(rng, max(2, runs // 10), evals):
        run = client.create_run(exp, run_name=job)
        client.log_batch(run.info.run_id, metrics=[Metric("eval", float(v), 0, s)
                                                   for s, v in enumerate(c)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--evals", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-own-logs-") as tmp:
        root = Path(tmp)
        write_logs(root, np.random.default_rng(args.seed), args.runs, args.evals)
        for sub in ("jsonl", "tb", "mlflow"):
            t0 = time.perf_counter()
            got = read_own_runs(root / sub)
            dt = time.perf_counter() - t0
            n = len(got.curves)
            print(f"read {sub:<6} {n:5d} runs x {args.evals} evals: {dt:7.2f} s "
                  f"({1000 * dt / n:.1f} ms a run)")
        t0 = time.perf_counter()
        own = read_own_runs(root)
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        replay_rules(own)
        dt = time.perf_counter() - t0
        print(f"read all {len(own.curves)} runs: {read_s:.2f} s; replay none, default, "
              f"evalstop:k=2: {dt:.2f} s ({1000 * dt / len(own.curves):.1f} ms a run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
