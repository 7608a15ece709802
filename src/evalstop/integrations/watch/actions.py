"""The action run on a stop: a shell command template with placeholders.

``{job}``, ``{best_step}``, ``{best_checkpoint}``, ``{best_score}``, ``{stop_step}`` and
``{reason}`` are replaced by their values quoted with ``shlex.quote``, so a job name can
never inject shell syntax: do not put quotes around placeholders yourself. Literal braces
are written ``{{`` and ``}}`` (``str.format`` rules). ``{best_checkpoint}`` comes from a
checkpoint template such as ``/ckpt/{job}/checkpoint-{best_step}``.

Shipped examples: ``examples/actions/`` (scancel, kubectl suspend of a Job or a Kueue
workload, Ray Jobs stop_job).
"""

from __future__ import annotations

import shlex
import string
import subprocess
from dataclasses import dataclass

PLACEHOLDERS = ("job", "best_step", "best_checkpoint", "best_score", "stop_step", "reason")
CHECKPOINT_PLACEHOLDERS = ("job", "best_step")
OUTPUT_TAIL = 2000  # characters of the command's output kept in the state database
# Longest --interval / --action-timeout. inf or 1e300 made Event.wait and subprocess fail
# with an OverflowError traceback; a week is far beyond any real poll or stop command.
MAX_SECONDS = 7 * 24 * 3600.0


def check_seconds(option: str, value: float) -> float:
    """``value`` as a duration in (0, MAX_SECONDS], else ValueError naming ``option``."""
    if not 0 < value <= MAX_SECONDS:  # NaN fails too
        raise ValueError(f"{option} must be > 0 and <= {MAX_SECONDS:g} seconds (a week), "
                         f"got {value!r}")
    return value


def _fields(template: str, allowed: tuple[str, ...], what: str) -> set[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"bad {what} {template!r}: {exc} (write literal braces as {{{{ }}}})") \
            from None
    names = set()
    for _text, name, spec, conv in parsed:
        if name is None:
            continue
        if name not in allowed:
            raise ValueError(
                f"bad {what} {template!r}: unknown placeholder {{{name}}}; "
                f"known: {', '.join('{' + a + '}' for a in allowed)}"
            )
        if spec or conv:
            raise ValueError(f"bad {what} {template!r}: {{{name}}} takes no format spec")
        names.add(name)
    return names


@dataclass(frozen=True, slots=True)
class ActionResult:
    rc: int
    output: str


class ShellAction:
    def __init__(self, template: str, *, checkpoint_template: str | None = None,
                 timeout: float = 120.0) -> None:
        if not isinstance(template, str) or not template.strip():
            raise ValueError(f"--action must be a command template, got {template!r}")
        check_seconds("--action-timeout", timeout)
        used = _fields(template, PLACEHOLDERS, "--action")
        if checkpoint_template is not None:
            _fields(checkpoint_template, CHECKPOINT_PLACEHOLDERS, "--checkpoint-template")
        elif "best_checkpoint" in used:
            raise ValueError(
                "--action uses {best_checkpoint} but no --checkpoint-template says where "
                "checkpoints are (e.g. '/ckpt/{job}/checkpoint-{best_step}')"
            )
        self.template = template
        self.checkpoint_template = checkpoint_template
        self.timeout = timeout

    def checkpoint(self, job: str, best_step: int | None) -> str:
        if self.checkpoint_template is None or best_step is None:
            return ""
        return self.checkpoint_template.format(job=job, best_step=best_step)

    def render(self, *, job: str, best_step: int | None, best_score: float | None,
               stop_step: int | None, reason: str) -> str:
        values = {
            "job": job,
            "best_step": "" if best_step is None else best_step,
            "best_checkpoint": self.checkpoint(job, best_step),
            "best_score": "" if best_score is None else repr(float(best_score)),
            "stop_step": "" if stop_step is None else stop_step,
            "reason": reason,
        }
        return self.template.format(**{k: shlex.quote(str(v)) for k, v in values.items()})

    def run(self, command: str) -> ActionResult:
        try:
            proc = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=self.timeout,
                stdin=subprocess.DEVNULL, check=False,  # a failed action is recorded, not raised
            )
        except subprocess.TimeoutExpired:
            return ActionResult(124, f"timed out after {self.timeout:g}s")
        except OSError as exc:
            return ActionResult(127, f"could not run: {exc}")
        out = (proc.stdout or "") + (proc.stderr or "")
        return ActionResult(proc.returncode, out[-OUTPUT_TAIL:])
