#!/usr/bin/env python3
"""Stop a Ray job (Ray Jobs API) that EvalStop stopped.

    evalstop watch --jsonl /logs --db watch.db \
      --action 'python examples/actions/ray_stop_job.py --tenant {tenant} -- \
                {job} {best_step} {best_checkpoint}'

JOB is the Ray job's submission id. Ray Jobs has no namespaces, so the scope is the id:
it must start with ``TENANT-`` (submit each tenant's jobs with ``--submission-id
TENANT-...``), and a job whose metadata names a ``tenant`` must name this one. The Ray
dashboard address comes from --address or RAY_ADDRESS (default http://127.0.0.1:8265).

Exit status: 0 only when a running job was stopped; 1 when nothing was stopped (already
finished, unknown job, unreachable dashboard, another tenant's job); 2 for bad operands
or a missing ``ray[default]``; 3 for --dry-run (DRY_RUN=1), which stops nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
TENANT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def _fail(code: int, msg: str) -> int:
    print(f"ray_stop_job.py: {msg}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="stop a Ray job that EvalStop stopped")
    p.add_argument("--tenant", required=True, help="the job's tenant (the id's prefix)")
    p.add_argument("job", help="Ray job submission id")
    p.add_argument("best_step", help="the job's best eval step")
    p.add_argument("best_checkpoint", nargs="?", default="", help="its best checkpoint")
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS", "http://127.0.0.1:8265"))
    p.add_argument("--dry-run", action="store_true", default=os.environ.get("DRY_RUN") == "1")
    args = p.parse_args(argv)
    if not TENANT.fullmatch(args.tenant):
        return _fail(2, f"bad tenant {args.tenant!r}")
    if not ID.fullmatch(args.job):
        return _fail(2, f"bad submission id {args.job!r}")
    if not args.job.startswith(args.tenant + "-"):
        return _fail(1, f"job {args.job!r} does not belong to tenant {args.tenant!r} "
                        f"(its id must start with {args.tenant + '-'!r}); not stopped")
    if not re.fullmatch(r"[0-9]*", args.best_step):
        return _fail(2, f"bad best step {args.best_step!r}")
    what = f"Ray job {args.job} at {args.address}; best step {args.best_step} " \
           f"{args.best_checkpoint}".rstrip()
    if args.dry_run:
        print(f"dry run: would stop {what}; nothing stopped")
        return 3
    try:
        from ray.job_submission import JobSubmissionClient

        client = JobSubmissionClient(args.address)
    except ImportError:
        return _fail(2, "needs the Ray Jobs SDK: pip install 'ray[default]'")
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        if "ray[default]" in str(exc):
            return _fail(2, "needs the Ray Jobs SDK: pip install 'ray[default]'")
        return _fail(1, f"cannot reach Ray at {args.address}: {exc}".splitlines()[0])
    try:
        meta = client.get_job_info(args.job).metadata or {}
        if "tenant" in meta and meta["tenant"] != args.tenant:
            return _fail(1, f"job {args.job!r} belongs to tenant {meta['tenant']!r}; "
                            "not stopped")
        stopped = client.stop_job(args.job)  # False if it had already finished
    except Exception as exc:  # noqa: BLE001 - unknown job, dashboard errors
        return _fail(1, f"could not stop {args.job!r}: {exc}".splitlines()[0])
    if not stopped:
        return _fail(1, f"Ray job {args.job} had already finished; nothing stopped")
    print(f"stopped {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
