"""The action run on a stop: a shell command template with placeholders.

``{job}`` (the job name its records give), ``{tenant}`` (who owns its log, from where the
log lies: see ``tenants``), ``{source}`` (the log file or TensorBoard run),
``{best_step}``, ``{best_checkpoint}``, ``{best_score}``, ``{stop_step}`` and ``{reason}``
are replaced by their values quoted with ``shlex.quote``, so a job name can never inject
shell syntax. A template that puts a placeholder inside quotes of its own (``'{job}'``,
``"--name={job}"``) is refused at start: the quoting would then be undone. Literal braces
are written ``{{`` and ``}}`` (``str.format`` rules).

``{best_checkpoint}`` comes from a checkpoint template such as
``/ckpt/{tenant}/{job}/checkpoint-{best_step}``, normalised (``..`` resolved) and required
to stay under the checkpoint root (``--checkpoint-root``; by default the template's
fixed leading folder, ``/ckpt`` here): a job name with ``../`` cannot point it elsewhere.

Each command runs in its own process group (its own session); a timeout kills the whole
group, not just ``/bin/sh``. A command that cannot be started at all (an embedded NUL,
no shell) is an exit status 127 result, never an exception.

Shipped examples: ``examples/actions/`` (scancel, kubectl suspend of a Job or a Kueue
workload, Ray Jobs stop_job); each scopes its stop to ``--tenant``.
"""

from __future__ import annotations

import os
import shlex
import signal
import string
import subprocess
from dataclasses import dataclass

PLACEHOLDERS = ("job", "tenant", "source", "best_step", "best_checkpoint", "best_score",
                "stop_step", "reason")
CHECKPOINT_PLACEHOLDERS = ("job", "tenant", "best_step")
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


def _check_unquoted(template: str, what: str) -> None:
    """Refuse a placeholder inside the template's own shell quotes: ``'{job}'`` would
    wrap the already-quoted value in a second layer that undoes the first."""
    quote = None  # the open quote character, if any
    for text, name, _spec, _conv in string.Formatter().parse(template):
        i = 0
        while i < len(text):
            c = text[i]
            if quote is None:
                if c == "\\":
                    i += 1
                elif c in "'\"":
                    quote = c
            elif quote == "'":
                if c == "'":
                    quote = None
            elif c == "\\":
                i += 1
            elif c == '"':
                quote = None
            i += 1
        if name is not None and quote is not None:
            raise ValueError(
                f"bad {what} {template!r}: {{{name}}} is inside {quote}-quotes; values are "
                "quoted for you, so remove the quotes around it"
            )


def normalise_path(path: str) -> str:
    """``path`` with ``.``, ``..`` and repeated ``/`` resolved (a ``scheme://`` prefix is
    kept); ValueError if ``..`` climbs above its start."""
    scheme, sep, rest = path.partition("://")
    if not sep:
        scheme, rest = "", path
    parts: list[str] = []
    for comp in rest.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                raise ValueError(f"{path!r} climbs above its root")
            parts.pop()
        else:
            parts.append(comp)
    lead = "/" if rest.startswith("/") else ""
    return (scheme + "://" if sep else "") + lead + "/".join(parts)


def _default_root(template: str) -> str | None:
    """The fixed folder a checkpoint template starts with (before any placeholder)."""
    fixed = next(iter(string.Formatter().parse(template)))[0] if template else ""
    cut = fixed.rfind("/")
    if cut <= 0 or fixed[:cut].endswith(":/"):
        return None
    return fixed[:cut]


class CheckpointEscape(ValueError):
    """A rendered ``{best_checkpoint}`` outside the checkpoint root."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    rc: int
    output: str


class ShellAction:
    def __init__(self, template: str, *, checkpoint_template: str | None = None,
                 checkpoint_root: str | None = None, timeout: float = 120.0) -> None:
        if not isinstance(template, str) or not template.strip():
            raise ValueError(f"--action must be a command template, got {template!r}")
        check_seconds("--action-timeout", timeout)
        used = _fields(template, PLACEHOLDERS, "--action")
        _check_unquoted(template, "--action")
        self.checkpoint_root = None
        if checkpoint_template is not None:
            _fields(checkpoint_template, CHECKPOINT_PLACEHOLDERS, "--checkpoint-template")
            root = checkpoint_root if checkpoint_root is not None else \
                _default_root(checkpoint_template)
            if root is None:
                raise ValueError(
                    f"--checkpoint-template {checkpoint_template!r} starts with a placeholder;"
                    " give --checkpoint-root, the folder every checkpoint must be under")
            try:
                self.checkpoint_root = normalise_path(root)
            except ValueError as exc:
                raise ValueError(f"bad --checkpoint-root: {exc}") from None
            if self.checkpoint_root in ("", "/") or self.checkpoint_root.endswith("://"):
                raise ValueError(f"--checkpoint-root {root!r} is not a folder to confine to")
        elif "best_checkpoint" in used:
            raise ValueError(
                "--action uses {best_checkpoint} but no --checkpoint-template says where "
                "checkpoints are (e.g. '/ckpt/{job}/checkpoint-{best_step}')"
            )
        self.template = template
        self.checkpoint_template = checkpoint_template
        self.timeout = timeout

    def checkpoint(self, job: str, best_step: int | None, tenant: str = "") -> str:
        """The normalised best checkpoint; CheckpointEscape if outside the root."""
        if self.checkpoint_template is None or best_step is None:
            return ""
        raw = self.checkpoint_template.format(job=job, best_step=best_step, tenant=tenant)
        root = self.checkpoint_root
        try:
            path = normalise_path(raw)
        except ValueError:
            path = None
        if path is None or not (path == root or path.startswith(root.rstrip("/") + "/")):
            raise CheckpointEscape(f"best checkpoint {raw!r} is not under the checkpoint "
                                   f"root {root!r}")
        return path

    def render(self, *, job: str, best_step: int | None, best_score: float | None,
               stop_step: int | None, reason: str, tenant: str = "",
               source: str = "") -> str:
        """The command for one stop; CheckpointEscape if its checkpoint escapes."""
        values = {
            "job": job,
            "tenant": tenant,
            "source": source,
            "best_step": "" if best_step is None else best_step,
            "best_checkpoint": self.checkpoint(job, best_step, tenant),
            "best_score": "" if best_score is None else repr(float(best_score)),
            "stop_step": "" if stop_step is None else stop_step,
            "reason": reason,
        }
        return self.template.format(**{k: shlex.quote(str(v)) for k, v in values.items()})

    def run(self, command: str) -> ActionResult:
        try:
            proc = subprocess.Popen(
                command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True,  # its own process group
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:  # NUL byte, no /bin/sh
            return ActionResult(127, f"could not run: {exc}")
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a child left the group and holds the pipe
                proc.kill()
                proc.wait()
            return ActionResult(124, f"timed out after {self.timeout:g}s; its process group "
                                     "was killed")
        text = out.decode("utf-8", "replace")  # a command's output may be any bytes
        return ActionResult(proc.returncode, text[-OUTPUT_TAIL:])


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
