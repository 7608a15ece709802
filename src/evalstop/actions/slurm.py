"""``evalstop action slurm``: cancel one Slurm job by its id, the tenant's only.

    evalstop watch ... --action 'evalstop action slurm --tenant {tenant} --job-id {job_id}
        --job {job} --stop-step {stop_step} --best-step {best_step}
        --best-checkpoint {best_checkpoint}'

The id is ``SLURM_JOB_ID``, or for an array task ``ARRAYJOBID_TASKID`` (``123_4``, from
``SLURM_ARRAY_JOB_ID`` and ``SLURM_ARRAY_TASK_ID``): what the training side writes as
``"job_id"`` (``evalstop.jobid``).
``squeue --states=all -j ID`` (``sacct`` once slurmctld has forgotten it) says whose it is
and whether it runs; an id that names several jobs (a whole array) is refused. The job is
cancelled only if its account equals the tenant exactly (Slurm's own ``--account``
filter ignores case) and it is pending, running or suspended. Before the cancel, its
AdminComment (an operator's right; else its Comment, which its owner may set) names
EvalStop, the stop step, the best step and the checkpoint; ``sacct -o AdminComment``
keeps it. The cancel is a plain ``scancel``: Slurm records CANCELLED, sends SIGTERM, and
SIGKILL after the cluster's KillWait, the job's grace to save. A job that ends by itself
as the cancel lands (COMPLETED, not CANCELLED) freed nothing: exit 10, as for a job already
ended, and no note. With ``--notes FILE``
(default ``$EVALSTOP_NOTES``) a line per stop is appended there too.
"""

from __future__ import annotations

import os
import re
import time

from evalstop.actions import (
    ALREADY_ENDED,
    DRY_RUN,
    REFUSED,
    USAGE,
    Outcome,
    add_common,
    description,
    finish,
    first_line,
    note,
    same_owner,
    tool,
)

SLURM_ID = re.compile(r"[0-9]+(_[0-9]+)?")
ACTIVE = {"PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
          "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT"}


def add_parser(sub):
    p = sub.add_parser("slurm", help="cancel a Slurm job by id, only the tenant's account's",
                       description=description(__doc__))
    add_common(p)
    p.add_argument("--notes", default=os.environ.get("EVALSTOP_NOTES", ""), metavar="FILE",
                   help="append a line per stop to FILE (default: $EVALSTOP_NOTES, if set)")
    return p


def _rows(out: str) -> list[list[str]]:
    return [line.split("|") for line in out.splitlines() if line.strip()]


def whose(job_id: str) -> tuple[str, str, str]:
    """(the id to act on, its account, its state), from squeue, else sacct."""
    r = tool(["squeue", "-h", "--states=all", "-j", job_id, "-o", "%i|%A|%a|%T"], "Slurm")
    rows = [row for row in _rows(r.stdout) if len(row) == 4] if r.returncode == 0 else []
    if not rows:
        if r.returncode != 0 and "invalid job id" not in r.stderr.lower():
            raise Outcome(REFUSED, f"squeue failed: {first_line(r.stderr)}")
        s = tool(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "JobID,Account,State"],
                 "Slurm")
        if s.returncode != 0:
            raise Outcome(REFUSED, f"sacct failed: {first_line(s.stderr)}")
        rows = [[x[0], x[0], x[1], x[2].split()[0] if x[2] else ""]
                for x in _rows(s.stdout) if len(x) == 3]
    if not rows:
        raise Outcome(REFUSED, f"Slurm knows no job {job_id}; nothing stopped")
    if len(rows) > 1:
        raise Outcome(REFUSED, f"job id {job_id} names {len(rows)} jobs (a whole array?); "
                               "a stop acts on one: write an array task's id as "
                               "ARRAYJOBID_TASKID; nothing stopped")
    shown, _raw, account, state = rows[0]
    return shown, account, state


def _ended_by_itself(target: str, wait_s: float = 5.0) -> str:
    """The state a job ended in by itself, or "": a job that ends as the cancel lands takes
    ``scancel``'s 0 and stays COMPLETED (or FAILED, ...), not CANCELLED; its stop freed
    nothing and must not be reported as one. COMPLETING says not yet, so ask again."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            _shown, _account, state = whose(target)
        except Outcome:
            return ""  # forgotten or unreadable: scancel's answer stands
        if state != "COMPLETING" or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    return "" if state in ACTIVE or state in ("CANCELLED", "COMPLETING") else state


def act(args) -> str:
    if not SLURM_ID.fullmatch(args.job_id):
        raise Outcome(USAGE, f"--job-id {args.job_id!r} is not a Slurm job id (N or N_TASK)")
    target, account, state = whose(args.job_id)
    if not same_owner(account, args.tenant):
        raise Outcome(REFUSED, f"job {target} belongs to account {account!r}, not "
                               f"to tenant {args.tenant!r}; nothing stopped")
    if state not in ACTIVE:
        raise Outcome(ALREADY_ENDED, f"job {target} (account {account}) is {state}: already "
                                     "ended, nothing to do")
    if args.dry_run:
        raise Outcome(DRY_RUN, f"dry run: would cancel job {target} (account {account}, "
                               f"{state}); nothing stopped")
    text = note(args)
    warn = ""
    if all(tool(["scontrol", "update", f"JobId={target}", f"{field}={text}"],
                "Slurm").returncode for field in ("AdminComment", "Comment")):
        warn = " (could not record the stop in its comment)"
    c = tool(["scancel", "--", target], "Slurm")
    if c.returncode != 0:
        raise Outcome(REFUSED, f"scancel {target} failed: {first_line(c.stderr)}")
    ended = _ended_by_itself(target)
    if ended:
        raise Outcome(ALREADY_ENDED, f"job {target} (account {account}) ended {ended} by "
                                     "itself as it was cancelled: nothing stopped")
    if args.notes:
        fields = [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), args.tenant, args.job,
                  target, args.best_step, args.best_checkpoint]
        with open(args.notes, "a", encoding="utf-8") as fh:
            fh.write("\t".join(f.replace("\t", " ") for f in fields) + "\n")
    return (f"cancelled job {target} (account {account}, was {state}); {text}{warn}")


def run(args) -> int:
    return finish("slurm", act, args)
