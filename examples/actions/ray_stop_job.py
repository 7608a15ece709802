#!/usr/bin/env python3
"""Stop a Ray job (Ray Jobs API) that EvalStop stopped.

    evalstop watch --jsonl /logs --db watch.db \
      --action 'python examples/actions/ray_stop_job.py {job} {best_step} {best_checkpoint}'

JOB is the Ray job's submission id. The Ray dashboard address comes from --address or
RAY_ADDRESS (default http://127.0.0.1:8265). --dry-run (or DRY_RUN=1) prints what it
would do. Needs ``ray`` (pip install 'evalstop[ray]') unless dry-running.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="stop a Ray job that EvalStop stopped")
    p.add_argument("job", help="Ray job submission id")
    p.add_argument("best_step", help="the job's best eval step")
    p.add_argument("best_checkpoint", nargs="?", default="", help="its best checkpoint")
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS", "http://127.0.0.1:8265"))
    p.add_argument("--dry-run", action="store_true", default=os.environ.get("DRY_RUN") == "1")
    args = p.parse_args(argv)
    if args.dry_run:
        print(f"would stop Ray job {args.job} at {args.address}; best step {args.best_step} "
              f"{args.best_checkpoint}".rstrip())
        return 0
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        print("ray_stop_job.py needs ray: pip install 'evalstop[ray]'", file=sys.stderr)
        return 2
    client = JobSubmissionClient(args.address)
    stopped = client.stop_job(args.job)  # False if it had already finished
    print(f"{'stopped' if stopped else 'already finished'}: Ray job {args.job}; "
          f"best step {args.best_step} {args.best_checkpoint}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
