"""The action run on a stop: a shell command template with placeholders.

``{job}`` (the job name its records give), ``{job_id}`` (the scheduler's id of the job,
from the ``job_id`` of the record the stop was decided on: ``evalstop.jobid``; empty
without one), ``{tenant}`` (who owns its log, from where the
log lies: see ``tenants``), ``{source}`` (the log file or TensorBoard run),
``{best_step}``, ``{best_checkpoint}``, ``{best_score}``, ``{stop_step}`` and ``{reason}``
are replaced by their values quoted with ``shlex.quote``, so a job name can never inject
shell syntax. A template that puts a placeholder inside quotes of its own (``'{job}'``,
``"--name={job}"``) is refused at start: the quoting would then be undone. A placeholder given to
a program that runs its argument as code (``sh -c {job}``, ``bash -lc``, ``eval``,
``python -c``, ``ssh host {job}``...) is refused too: its quoting protects the value from
the first shell only, and the second would read it as syntax. Literal braces are written
``{{`` and ``}}`` (``str.format`` rules).

``{best_checkpoint}`` comes from a checkpoint template such as
``/ckpt/{tenant}/{job}/checkpoint-{best_step}``, normalised (``..`` resolved) and required
to stay under the checkpoint root (``--checkpoint-root``; by default the template's
fixed leading folder, ``/ckpt`` here): a job name with ``../`` cannot point it elsewhere.

Each command runs in its own session, marked in its environment; a timeout kills every
process it started, in its group, its session or not (``setsid``): see ``proctree``. A command that cannot be started at all (an embedded NUL,
no shell) is an exit status 127 result, never an exception.

Shipped actions: ``evalstop action slurm|kubernetes|ray`` (``evalstop.actions``), each
acting on ``--job-id {job_id}`` only after the scheduler says that the id is the tenant's
and still running. Such an action is idempotent (run twice, the second finds the job
ended and exits ``ALREADY_ENDED``), so a controller killed while it ran runs it again on
restart (:func:`idempotent`); ``--action-idempotent`` says the same of a command of one's
own.
"""

from __future__ import annotations

import os
import re
import shlex
import string
import subprocess
from dataclasses import dataclass

from evalstop.integrations.watch.proctree import kill_tree, marked_env, new_token

PLACEHOLDERS = ("job", "job_id", "tenant", "source", "best_step", "best_checkpoint", "best_score",
                "stop_step", "reason")
CHECKPOINT_PLACEHOLDERS = ("job", "tenant", "best_step")
OUTPUT_TAIL = 2000  # characters of the command's output kept in the state database
# Longest --interval / --action-timeout. inf or 1e300 made Event.wait and subprocess fail
# with an OverflowError traceback; a week is far beyond any real poll or stop command.
MAX_SECONDS = 7 * 24 * 3600.0
# Programs that run an argument as code: (program, the options whose next operand is that
# code, or None when every later operand is: eval, ssh's remote command).
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "csh", "tcsh",
          "su", "runuser")
CODE_OPTION = {**{sh: "c" for sh in SHELLS}, "python": "c", "perl": "eE", "ruby": "e",
               "node": "ep", "eval": None, "ssh": None, "source": None, ".": None}
_MARK = "EVALSTOPPLACEHOLDER"


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
    """Refuse a placeholder inside the template's own shell quotes (``'{job}'`` would
    wrap the already-quoted value in a second layer that undoes the first) or right after
    a backslash (``\\{job}`` escapes the value's opening quote)."""
    quote = None  # the open quote character, if any
    for text, name, _spec, _conv in string.Formatter().parse(template):
        i = 0
        while i < len(text):
            c = text[i]
            if c == "\\" and i == len(text) - 1 and name is not None and quote != "'":
                # \{job}: the backslash would escape the value's opening quote, and the
                # value would then be read as shell syntax.
                raise ValueError(f"bad {what} {template!r}: a backslash before {{{name}}} "
                                 "escapes its quoting; remove the backslash")
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


def _program(word: str) -> str:
    """``word`` as a key of CODE_OPTION: its base name, a version suffix dropped
    (``/usr/bin/python3.11`` -> ``python``)."""
    base = os.path.basename(word)
    return re.sub(r"[0-9.]+$", "", base) if base not in (".",) else base


def _check_not_code(template: str, what: str) -> None:
    """Refuse a placeholder that a second interpreter would read as code: the command
    word itself, the code operand of ``sh -c`` (``bash -lc``, ``python -c``, ``perl -e``,
    ``su -c``...), or any argument of ``eval``, ``source`` or ``ssh`` (which joins its
    arguments into a remote shell command). Values after the code operand (``sh -c
    'echo "$1"' _ {job}``) are positional parameters: allowed."""
    marked = "".join(text + ("" if name is None else f"{_MARK}{name}{_MARK}")
                     for text, name, _s, _c in string.Formatter().parse(template))
    lex = shlex.shlex(marked, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        words = list(lex)
    except ValueError:  # an unclosed quote: the shell will say so when it runs
        return
    found = re.compile(f"{_MARK}(\\w+){_MARK}")
    command: list[str] = []
    piped = ""  # a placeholder written into this pipeline by an earlier stage
    for word in [*words, ";"]:
        if word and set(word) <= set("();<>|&"):
            _check_command(command, found, template, what, piped)
            held = [w for w in command if found.search(w)]
            piped = (piped or (held[0] if held else "")) if word == "|" else ""
            command = []
        else:
            command.append(word)


def _check_command(words: list[str], found: re.Pattern, template: str, what: str,
                   piped: str) -> None:
    def refuse(word: str, why: str) -> None:
        name = found.search(word).group(1)
        raise ValueError(f"bad {what} {template!r}: {{{name}}} {why}; pass it as an "
                         "argument of a program that does not run it as code (e.g. "
                         "sh -c 'cmd \"$1\"' _ {" + name + "})")

    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words = words[1:]  # VAR=value before the command word
    if words and found.search(words[0]):
        refuse(words[0], "would be the command run")
    if piped and words and (_program(words[0]) in CODE_OPTION or _program(words[0]) == "xargs"):
        refuse(piped, f"is piped into {_program(words[0])}, which would run it as code")
    for i, word in enumerate(words):
        prog = _program(word)
        if prog not in CODE_OPTION:
            continue
        letters, rest = CODE_OPTION[prog], words[i + 1:]
        if letters is None:
            for arg in rest:
                if found.search(arg):
                    refuse(arg, f"is an argument of {prog}, which runs its arguments as code")
            continue
        for j, arg in enumerate(rest):
            if not (arg.startswith("-") and not arg.startswith("--")):
                continue
            if not set(arg[1:].split(_MARK)[0]) & set(letters):
                continue
            code = arg if found.search(arg) else (rest[j + 1] if j + 1 < len(rest) else "")
            if found.search(code):
                refuse(code, f"would be the code that {prog} {arg.split(_MARK)[0]} runs")


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


def _tenant_root(template: str) -> str | None:
    """The template's leading folders up to the last one that names only ``{tenant}`` and
    fixed text (``/ckpt/{tenant}`` of ``/ckpt/{tenant}/{job}/checkpoint-{best_step}``):
    the tenant's own checkpoint folder; None when no leading folder names the tenant."""
    scheme, sep, rest = template.partition("://")
    if not sep:
        scheme, rest = "", template
    lead = []
    for comp in rest.split("/")[:-1]:  # the last component is never a folder here
        used = {name for _t, name, _s, _c in string.Formatter().parse(comp) if name}
        if used - {"tenant"}:
            break
        lead.append(comp)
    if not any("{tenant}" in comp for comp in lead):
        return None
    while "{tenant}" not in lead[-1]:  # stop at the tenant's own folder
        lead.pop()
    return (scheme + sep) + "/".join(lead)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _checked_root(template: str, given: str | None) -> str:
    """The checkpoint root (``{tenant}`` allowed in it), normalised, or ValueError."""
    root = given if given is not None else _default_root(template)
    if root is None:
        raise ValueError(
            f"--checkpoint-template {template!r} starts with a placeholder;"
            " give --checkpoint-root, the folder every checkpoint must be under")
    _fields(root, ("tenant",), "--checkpoint-root")
    try:
        fixed = normalise_path(root.format(tenant="t"))
        root = normalise_path(root)
    except ValueError as exc:
        raise ValueError(f"bad --checkpoint-root: {exc}") from None
    if fixed in ("", "/") or fixed.endswith("://"):
        raise ValueError(f"--checkpoint-root {root!r} is not a folder to confine to")
    return root


def shipped_action(command: str) -> bool:
    """Whether a rendered command is exactly one shipped action given a job id
    (``evalstop action KIND ... --job-id ID``, or ``PYTHON -m evalstop action ...``): one
    simple command, nothing around it, so running it again is safe."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        words = list(lex)
    except ValueError:
        return False
    if any(w and set(w) <= set("();<>|&") for w in words):
        return False
    if words and os.path.basename(words[0]) == "evalstop":
        rest = words[1:]
    elif len(words) > 2 and _program(words[0]) == "python" and words[1:3] == ["-m", "evalstop"]:
        rest = words[3:]
    else:
        return False
    ids = [b for a, b in zip(rest, rest[1:]) if a == "--job-id"]
    ids += [w.split("=", 1)[1] for w in rest if w.startswith("--job-id=")]
    return bool(rest) and rest[0] == "action" and any(ids)


class CheckpointEscape(ValueError):
    """A rendered ``{best_checkpoint}`` outside the checkpoint root."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    rc: int
    output: str


class ShellAction:
    def __init__(self, template: str, *, checkpoint_template: str | None = None,
                 checkpoint_root: str | None = None, timeout: float = 120.0,
                 idempotent: bool = False) -> None:
        if not isinstance(template, str) or not template.strip():
            raise ValueError(f"--action must be a command template, got {template!r}")
        check_seconds("--action-timeout", timeout)
        used = _fields(template, PLACEHOLDERS, "--action")
        _check_unquoted(template, "--action")
        _check_not_code(template, "--action")
        self.checkpoint_root = self.tenant_root = None
        if checkpoint_template is not None:
            _fields(checkpoint_template, CHECKPOINT_PLACEHOLDERS, "--checkpoint-template")
            self.checkpoint_root = _checked_root(checkpoint_template, checkpoint_root)
            self.tenant_root = _tenant_root(checkpoint_template)
        elif "best_checkpoint" in used:
            raise ValueError(
                "--action uses {best_checkpoint} but no --checkpoint-template says where "
                "checkpoints are (e.g. '/ckpt/{job}/checkpoint-{best_step}')"
            )
        self.template = template
        self.checkpoint_template = checkpoint_template
        self.timeout = timeout
        self.idempotent = idempotent  # the operator says: safe to run twice

    def safe_to_rerun(self, command: str) -> bool:
        """Whether ``command`` (rendered) may run again after a kill left its outcome
        unknown: a shipped action by job id, or this action declared idempotent."""
        return self.idempotent or shipped_action(command)

    def checkpoint(self, job: str, best_step: int | None, tenant: str = "") -> str:
        """The normalised best checkpoint; CheckpointEscape if outside the checkpoint root
        or, when the template has a folder of the tenant's own, outside that folder."""
        if self.checkpoint_template is None or best_step is None:
            return ""
        raw = self.checkpoint_template.format(job=job, best_step=best_step, tenant=tenant)
        if "/" in tenant or tenant in (".", ".."):  # a tenant value may not move the root
            raise CheckpointEscape(f"tenant {tenant!r} cannot name a checkpoint folder")
        roots = [normalise_path(r.format(tenant=tenant))
                 for r in (self.checkpoint_root, self.tenant_root) if r is not None]
        try:
            path = normalise_path(raw)
        except ValueError:
            path = None
        for root in roots:
            if path is None or not _under(path, root):
                raise CheckpointEscape(f"best checkpoint {raw!r} is not under the checkpoint "
                                       f"root {root!r}")
        return path

    def render(self, *, job: str, best_step: int | None, best_score: float | None,
               stop_step: int | None, reason: str, tenant: str = "",
               source: str = "", job_id: str | None = None) -> str:
        """The command for one stop; CheckpointEscape if its checkpoint escapes."""
        values = {
            "job": job,
            "job_id": job_id or "",
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
        token = new_token()
        try:
            proc = subprocess.Popen(
                command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True,  # its own session
                env=marked_env(token),  # inherited by every descendant: see proctree
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:  # NUL byte, no /bin/sh
            return ActionResult(127, f"could not run: {exc}")
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            # The group, the session and every process with the action's marker: a child
            # started with setsid has left the first two, not the third.
            kill_tree(proc.pid, token)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a child cleared its environment and left
                proc.kill()
                proc.wait()
            return ActionResult(124, f"timed out after {self.timeout:g}s; every process it "
                                     "started was killed")
        text = out.decode("utf-8", "replace")  # a command's output may be any bytes
        return ActionResult(proc.returncode, text[-OUTPUT_TAIL:])
