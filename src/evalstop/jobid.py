"""The scheduler's id of the job a training script runs in, as its eval log carries it.

An eval-log record may carry ``"job_id"``: the scheduler's own id of the job that wrote
it. A stop acts on that id, never on the job's name, so a reused name, a later
resubmission or an old log can never reach another job. :func:`from_environ` is the id a
training process finds in its environment:

* ``EVALSTOP_JOB_ID`` when set (a Ray Jobs submission id, a Kubernetes Job name: the
  submitter knows it and passes it in, e.g. ``runtime_env={"env_vars": ...}`` or the
  downward API);
* on Slurm, an array task as ``ARRAYJOBID_TASKID`` (``SLURM_ARRAY_JOB_ID`` and
  ``SLURM_ARRAY_TASK_ID``: the form ``squeue -j`` and ``scancel`` take for one task), else
  ``SLURM_JOB_ID``.

Standard library only, with no import of the package: the testbed's worker (run with
``python -I``) loads this file by its path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# Digits (Slurm), digits_digits (a Slurm array task), a Ray submission id, a Kubernetes
# object name: letters, digits and ``_.:-``, never a leading ``-`` (it would read as an
# option) and never a shell or list separator (``,`` would name two Slurm jobs).
MAX_LEN = 200
JOB_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.:-]{{0,{MAX_LEN - 1}}}")
ENV = "EVALSTOP_JOB_ID"


def check(value: object) -> str | None:
    """Why ``value`` cannot be a job id, or None when it can."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"'job_id' must be a string, got {type(value).__name__}"
    if not JOB_ID.fullmatch(str(value)):
        shown = repr(str(value)[:60])
        return (f"'job_id' {shown} is not a scheduler job id (letters, digits and _.:- "
                f"only, at most {MAX_LEN}, not starting with a sign)")
    return None


def from_environ(environ: Mapping[str, str] | None = None) -> str | None:
    """This process's scheduler job id (see the module's doc), or None outside one."""
    env = os.environ if environ is None else environ
    given = env.get(ENV)
    if given:
        return given
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return env.get("SLURM_JOB_ID") or None
