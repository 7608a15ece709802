"""The shipped stop actions: ``evalstop action slurm|kubernetes|ray``.

Each acts on one job, named by the scheduler's id (``--job-id``, the ``{job_id}`` that
``evalstop watch`` takes from the eval log: ``evalstop.jobid``), never by a name. Before
acting it asks the scheduler who owns that id and whether it still runs, and acts only
where the owner equals ``--tenant`` exactly (letter case and Unicode form included:
:func:`same_owner`). So a reused name, a resubmission, an old log or another tenant's id
can never reach another job, and running an action twice is safe (the second run finds
the job ended).

Exit status, the same for every action (the controller reads it):

* ``STOPPED`` (0): the job was running and is now stopped;
* ``REFUSED`` (1): nothing done: not the tenant's job, no such job, the scheduler failed;
* ``USAGE`` (2): bad operands, no job id;
* ``DRY_RUN`` (3): ``--dry-run``: the checks ran, nothing was stopped;
* ``ALREADY_ENDED`` (10): the tenant's job had already ended (or been stopped): nothing
  to do. ``evalstop watch`` records it as done, not failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence

from evalstop import jobid

# The one exact-owner rule (Slurm would match --account regardless of case).
from evalstop.identity import same_owner  # noqa: F401 - re-exported

STOPPED, REFUSED, USAGE, DRY_RUN, ALREADY_ENDED = 0, 1, 2, 3, 10
TOOL_TIMEOUT = 60.0  # seconds for one scheduler command (squeue, kubectl, an HTTP call)


class Outcome(Exception):  # noqa: N818 - how an action ends, not an error of the code
    """The end of an action: its exit status and its one line."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def description(doc: str) -> str:
    """A module doc's third paragraph as ``--help`` text (no reST quoting)."""
    return doc.split("\n\n")[2].replace("``", "")


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", required=True,
                   help="the tenant the stop was decided for ({tenant}); the job's owner "
                        "must be exactly this")
    p.add_argument("--job-id", default="", metavar="ID",
                   help="the scheduler's id of the job ({job_id}); without one, nothing is "
                        "done")
    p.add_argument("--job", default="", metavar="NAME",
                   help="the job's name in its eval log ({job}), for the note only")
    p.add_argument("--stop-step", default="", metavar="N", help="{stop_step}, for the note")
    p.add_argument("--best-step", default="", metavar="N", help="{best_step}, for the note")
    p.add_argument("--best-checkpoint", default="", metavar="PATH",
                   help="{best_checkpoint}, for the note")
    p.add_argument("--dry-run", action="store_true",
                   help="check the job with the scheduler, stop nothing (exit 3)")


def check_common(args) -> None:
    """Operands every action needs, or ``Outcome(USAGE)``."""
    if not args.job_id:
        raise Outcome(USAGE, "no job id (--job-id is empty: the eval log's records carry no "
                             "\"job_id\"); nothing stopped, since a name may be another job's")
    problem = jobid.check(args.job_id)
    if problem is not None:
        raise Outcome(USAGE, problem.replace("'job_id'", "--job-id"))
    t = args.tenant
    if not t or t.startswith("-") or not t.isprintable() or len(t) > 256:
        raise Outcome(USAGE, f"bad --tenant {t[:60]!r}")
    for name in ("stop_step", "best_step"):
        if not getattr(args, name).isdigit() and getattr(args, name) != "":
            raise Outcome(USAGE, f"bad --{name.replace('_', '-')} {getattr(args, name)!r}")
    if not args.best_checkpoint.isprintable() or not args.job.isprintable():
        raise Outcome(USAGE, "--best-checkpoint and --job must be printable text")


def note(args) -> str:
    """What is left on the job (Slurm's AdminComment, a Kubernetes annotation)."""
    return (f"stopped by EvalStop at step {args.stop_step or '?'}; best step "
            f"{args.best_step or '?'}; checkpoint {args.best_checkpoint or 'none'}")


def tool(argv: Sequence[str], what: str) -> subprocess.CompletedProcess:
    """Run a scheduler command (never through a shell); ``Outcome(REFUSED)`` when it
    cannot be run at all."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, check=False,
                              timeout=TOOL_TIMEOUT, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise Outcome(REFUSED, f"{argv[0]} not found: is {what} installed here?") from None
    except subprocess.TimeoutExpired:
        raise Outcome(REFUSED, f"{argv[0]} did not answer in {TOOL_TIMEOUT:g} s") from None


def first_line(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[0][:300] if lines else "(no message)"


def finish(kind: str, act, args) -> int:
    """Run ``act(args)`` (returns the success line) and print its one line; the status."""
    try:
        check_common(args)
        line = act(args)
        code = STOPPED
    except Outcome as out:
        line, code = str(out), out.code
    stream = sys.stdout if code in (STOPPED, DRY_RUN, ALREADY_ENDED) else sys.stderr
    print(f"evalstop action {kind}: {line}", file=stream)
    return code
