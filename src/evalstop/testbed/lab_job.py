"""A real training job for Slurm: one lab run (``evalstop.lab``, CPU RL against a proxy
reward) that appends each eval to its log as it happens and saves the policy at each eval,
so ``evalstop watch`` can stop it mid-run and its best checkpoint is on disk.

    python -m evalstop.testbed.lab_job --pairs 100 --beta 0 --seed 0 --steps 100 \\
        --log LOGS/TENANT/RUN.jsonl --ckpt CKPT/TENANT/RUN

The job's Slurm name must be the run's id (``p100-b0-s0``): the log's records name it.
Each record carries the job's Slurm id (``"job_id"``, ``evalstop.jobid``), what a stop
acts on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ckpt", required=True)
    args = ap.parse_args(argv)

    from evalstop.jobid import from_environ
    from evalstop.lab._torch import torch_module
    from evalstop.lab.config import RunConfig
    from evalstop.lab.run import run_lab

    torch = torch_module()
    cfg = RunConfig.for_world("bigram", pairs=args.pairs, beta=args.beta, seed=args.seed,
                              steps=args.steps, eval_every=args.eval_every)
    os.makedirs(os.path.dirname(args.log) or ".", exist_ok=True)
    os.makedirs(args.ckpt, exist_ok=True)
    job_id = from_environ()
    with open(args.log, "a", encoding="utf-8") as log:
        def on_eval(record, policy):
            # The checkpoint first: a record on the log promises its step was saved.
            path = os.path.join(args.ckpt, f"checkpoint-{record['step']}")
            torch.save(policy.state_dict(), path + ".tmp")
            os.replace(path + ".tmp", path)
            if job_id:
                record = {**record, "job_id": job_id}
            log.write(json.dumps(record) + "\n")
            log.flush()

        run_lab(cfg, on_eval=on_eval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
