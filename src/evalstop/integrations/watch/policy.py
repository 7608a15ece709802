"""Per-tenant rules for ``evalstop watch``, from a TOML policy file (stdlib ``tomllib``).

::

    [defaults]                        # every tenant inherits these (all optional)
    metric = "eval"                   # JSONL field / TensorBoard tag holding the eval
    mode = "max"                      # "max": higher is better; "min" for losses
    detector = "default"              # a detector spec NAME[:key=value,...]
    eval_group = "math500"            # jobs of one group share a fleet noise estimate
    eval_n = 500                      # the eval is a pass rate over N items (or sigma=)
    action = "evalstop action slurm --tenant {tenant} --job-id {job_id}"
    checkpoint_template = "/ckpt/{tenant}/{job}/checkpoint-{best_step}"
    checkpoint_root = "/ckpt"         # {best_checkpoint} must resolve under it
    dry_run = false                   # decide and log, never run the action
    allow = ["*"]                     # job-name globs this controller may stop
    rotated = ["{name}-{date}.gz"]    # names its rotated logs take (beside "{name}.{n}")
    shadow = ["evalstop:k=2"]         # candidate rules followed in shadow (``shadow``)
    gpus = 8                          # the jobs' GPU count, for shadow GPU-hours

    [tenants.alice]                   # sources default to ["alice/**"]
    mode = "min"
    metric = "eval_loss"

    [tenants.bob]
    sources = ["teams/bob/**", "legacy/bob-*.jsonl"]
    dry_run = true
    mlflow_experiments = ["12", "40"] # MLflow experiments it owns, by id
    mlflow_user = "bob"               # and those its MLflow user may write (server auth)

    shadow = ["default:sigma=0.01"]   # top level: every tenant's candidates too

    [eval_groups.math500]             # optional: only to share a group between tenants
    shared = true                     # tenants weigh equally (detectors.shared_noise)
    max_factor = 1.5                  # others move a tenant's noise by at most this factor

Tenant names are identities (``identity``): two that differ only in case or Unicode form
(``alice``, ``Alice``) are refused at load. An eval group is each tenant's own (its jobs
pool only its own noise) unless an ``[eval_groups.NAME]`` table declares it shared.

A source (a log file or TensorBoard run, as a path relative to the watched root) belongs
to the first tenant, in file order, one of whose ``sources`` globs matches it; a source no
tenant matches is refused (logged once), never given a default owner. MLflow experiments
are owned by id or by MLflow permission, never by name (``mlflow_owner``); an id or an
MLflow user may be one tenant's only. Every error is one line naming the file, the key and
the problem (:class:`PolicyError`).
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import tomllib
from dataclasses import dataclass, fields, replace
from typing import Any

from evalstop.detectors import make_detector
from evalstop.detectors.shared_noise import DEFAULT_MAX_FACTOR, check_max_factor
from evalstop.identity import first_twins, twin
from evalstop.integrations.watch.records import Refused, show
from evalstop.integrations.watch.tenants import Tenancy

TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_KEYS = ("metric", "mode", "detector", "eval_group", "eval_n", "sigma", "action",
         "checkpoint_template", "checkpoint_root", "dry_run", "allow", "rotated", "shadow",
         "gpus", "mlflow_experiments", "mlflow_user")
_OWN_KEYS = ("mlflow_experiments", "mlflow_user")  # one tenant's each: not in [defaults]
MLFLOW_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_POLICY_BYTES = 1 << 20


class PolicyError(ValueError):
    """A policy problem, as one line: ``FILE: KEY: problem``."""


@dataclass(frozen=True)
class Rule:
    """The effective rule of one tenant (defaults merged in)."""

    tenant: str
    sources: tuple[str, ...]
    metric: str = "eval"
    mode: str = "max"
    detector: str = "default"
    eval_group: str | None = None
    eval_n: int | None = None
    sigma: float | None = None
    action: str | None = None
    checkpoint_template: str | None = None
    checkpoint_root: str | None = None
    dry_run: bool = False
    allow: tuple[str, ...] = ("*",)
    rotated: tuple[str, ...] = ()
    shadow: tuple[str, ...] = ()  # candidate rules followed in shadow (``shadow``)
    gpus: float | None = None  # the jobs' GPU count, when the log does not say
    mlflow_experiments: tuple[str, ...] = ()
    mlflow_user: str | None = None

    def matches(self, source: str) -> bool:
        return any(fnmatch.fnmatchcase(source, pat) for pat in self.sources)

    def allows(self, job: str) -> bool:
        return any(fnmatch.fnmatchcase(job, pat) for pat in self.allow)

    def shell_action(self, timeout: float = 120.0):
        """The tenant's stop action (``actions.ShellAction``), or None without one."""
        if self.action is None:
            return None
        from evalstop.integrations.watch.actions import ShellAction

        return ShellAction(self.action, checkpoint_template=self.checkpoint_template,
                           checkpoint_root=self.checkpoint_root, timeout=timeout)

    def detector_spec(self) -> str:
        """The detector spec with the stated noise (``eval_n``/``sigma``) folded in."""
        extra = []
        if self.eval_n is not None:
            extra.append(f"eval_n={self.eval_n}")
        if self.sigma is not None:
            extra.append(f"sigma={self.sigma!r}")
        if not extra:
            return self.detector
        sep = "," if ":" in self.detector else ":"
        return self.detector + sep + ",".join(extra)


@dataclass(frozen=True)
class EvalGroup:
    """How an eval group pools noise: each tenant's own (``max_factor`` 1), or, when
    ``shared``, the median of its tenants' estimates within ``max_factor`` of each one's."""

    name: str
    shared: bool = False
    max_factor: float = 1.0


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...]
    path: str = "<flags>"
    groups: tuple[EvalGroup, ...] = ()  # the [eval_groups.NAME] tables

    def group(self, name: str) -> EvalGroup:
        """Eval group ``name`` as declared, else private to each tenant."""
        for g in self.groups:
            if g.name == name:
                return g
        return EvalGroup(name)

    def rule_of(self, tenant: str) -> Rule | None:
        """The rule of ``tenant`` by name (the flags' single rule, ``*``, is everyone's)."""
        for rule in self.rules:
            if rule.tenant in (tenant, "*"):
                return rule
        return None

    def rule_for(self, source: str) -> Rule | None:
        """The rule of the tenant that owns ``source`` (a path under the watched root)."""
        for rule in self.rules:
            if rule.matches(source):
                return rule
        return None

    def describe(self) -> str:
        """The effective rule per tenant, for ``--check-policy``, written as TOML (unset
        keys as comments), with each detector spec resolved to its full form."""
        import json

        lines = [f"# policy {self.path}: {len(self.rules)} tenant(s), first match wins"]
        for r in self.rules:
            lines.append(f"[tenants.{r.tenant}]" if r.tenant != "*" else "[everyone]")
            for f in fields(r):
                v = getattr(r, f.name)
                if f.name == "tenant":
                    continue
                if v is None:
                    lines.append(f"# {f.name} = (not set)")
                    continue
                if isinstance(v, tuple):
                    v = list(v)
                lines.append(f"{f.name} = {json.dumps(v)}")
            full = make_detector(r.detector_spec(), mode=r.mode).spec
            lines.append(f"# detector in full: {full}")
        for g in self.groups:
            lines += [f"[eval_groups.{json.dumps(g.name)}]", f"shared = {json.dumps(g.shared)}",
                      f"max_factor = {g.max_factor!r}"]
        return "\n".join(lines) + "\n"


def single_rule(**values: Any) -> Policy:
    """The policy the CLI flags describe: one tenant, ``*``, owning every source."""
    rule = _checked(Rule(tenant="*", sources=("*", "**")), values, "<flags>", "")
    return Policy((rule,))


def load_policy(path: str) -> Policy:
    """Read and validate a policy file; :class:`PolicyError` on any problem."""
    from evalstop.fileio import read_regular

    try:  # a FIFO or device is refused before it is opened (a FIFO would block for ever)
        raw = read_regular(path, "--policy", MAX_POLICY_BYTES)
    except ValueError as exc:
        raise PolicyError(f"{path}: {exc}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PolicyError(f"{path}: policy is not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    return parse_policy(doc, path)


def parse_policy(doc: dict[str, Any], path: str = "<policy>") -> Policy:
    unknown = set(doc) - {"defaults", "tenants", "eval_groups", "shadow"}
    if unknown:
        raise PolicyError(f"{path}: {min(unknown)}: unknown table "
                          "(expected [defaults], [tenants.NAME], [eval_groups.NAME] and "
                          "shadow = [...])")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise PolicyError(f"{path}: defaults: must be a table")
    for key in _OWN_KEYS:
        if key in defaults:
            raise PolicyError(f"{path}: defaults.{key}: a tenant's own key, not a default")
    base = _checked(Rule(tenant="", sources=()), defaults, path, "defaults.")
    # A top-level shadow list is every tenant's, before its own (a tenant's own list,
    # or [defaults]', adds to it).
    everyone = ()
    if "shadow" in doc:
        everyone = _value("shadow", doc["shadow"], f"{path}: shadow")
        _check_shadow(everyone, "max", f"{path}: shadow")
    tenants = doc.get("tenants")
    if not isinstance(tenants, dict) or not tenants:
        raise PolicyError(f"{path}: tenants: give at least one [tenants.NAME] table")
    rules = []
    for name, table in tenants.items():
        where = f"tenants.{name}"
        if not TENANT_NAME.fullmatch(name):
            raise PolicyError(f"{path}: {where}: tenant names are 1-63 letters, digits, "
                              "'_', '.', '-' (first a letter or digit)")
        if not isinstance(table, dict):
            raise PolicyError(f"{path}: {where}: must be a table")
        table = dict(table)
        # By default a tenant owns its folder (logs, TensorBoard runs under it), a log
        # named after it in the root, and a TensorBoard run dir of its name.
        sources = table.pop("sources", [f"{name}/**", f"{name}.jsonl", name])
        if (not isinstance(sources, list) or not sources
                or not all(isinstance(s, str) and s.strip() for s in sources)):
            raise PolicyError(f"{path}: {where}.sources: must be a non-empty list of globs")
        if any(s.startswith("/") or ".." in s.split("/") for s in sources):
            raise PolicyError(f"{path}: {where}.sources: globs are relative to the watched "
                              "root (no leading '/', no '..')")
        rule = _checked(replace(base, tenant=name, sources=tuple(sources)), table, path,
                        where + ".")
        rules.append(replace(rule, shadow=tuple(dict.fromkeys(everyone + rule.shadow))))
    twins = first_twins(r.tenant for r in rules)
    if twins is not None:
        raise PolicyError(f"{path}: tenants.{twins[0]}: {twin(*twins)}")
    _one_owner(rules, path)
    return Policy(tuple(rules), path, _groups(doc.get("eval_groups", {}), rules, path))


def _groups(doc: Any, rules: list[Rule], path: str) -> tuple[EvalGroup, ...]:
    """The ``[eval_groups.NAME]`` tables, each naming a group some tenant's rule uses."""
    if not isinstance(doc, dict):
        raise PolicyError(f"{path}: eval_groups: must be a table of [eval_groups.NAME]")
    named = {r.eval_group for r in rules}
    groups = []
    for name, table in doc.items():
        where = f"{path}: eval_groups.{name}"
        if not isinstance(table, dict):
            raise PolicyError(f"{where}: must be a table")
        if name not in named:
            raise PolicyError(f"{where}: no tenant's eval_group names it")
        for key in set(table) - {"shared", "max_factor"}:
            raise PolicyError(f"{where}.{key}: unknown key (known: shared, max_factor)")
        shared = table.get("shared", False)
        if not isinstance(shared, bool):
            raise PolicyError(f"{where}.shared: must be true or false")
        if "max_factor" in table and not shared:
            raise PolicyError(f"{where}.max_factor: only a shared group (shared = true) "
                              "has one")
        try:
            factor = check_max_factor(table.get("max_factor", DEFAULT_MAX_FACTOR))
        except ValueError as exc:
            raise PolicyError(f"{where}.max_factor: {exc}") from None
        groups.append(EvalGroup(name, shared, factor if shared else 1.0))
    return tuple(groups)


def _one_owner(rules: list[Rule], path: str) -> None:
    """An MLflow experiment id or user named by two tenants would give both its runs."""
    seen: dict[tuple[str, str], str] = {}
    for rule in rules:
        named = [("mlflow_experiments", e) for e in rule.mlflow_experiments]
        named += [("mlflow_user", rule.mlflow_user)] if rule.mlflow_user else []
        for key, value in named:
            other = seen.setdefault((key, value), rule.tenant)
            if other != rule.tenant:
                raise PolicyError(f"{path}: tenants.{rule.tenant}.{key}: {value!r} is "
                                  f"already tenant {other}'s")


def _checked(rule: Rule, values: dict[str, Any], path: str, prefix: str) -> Rule:
    """``rule`` with ``values`` applied, each checked; errors name ``path`` and the key."""
    out: dict[str, Any] = {}
    for key, v in values.items():
        where = f"{path}: {prefix}{key}"
        if key not in _KEYS:
            raise PolicyError(f"{where}: unknown key (known: {', '.join(_KEYS)})")
        out[key] = _value(key, v, where)
    rule = replace(rule, **out)
    if rule.eval_n is not None and rule.sigma is not None:
        raise PolicyError(f"{path}: {prefix}eval_n: give eval_n or sigma, not both")
    try:
        make_detector(rule.detector_spec(), mode=rule.mode)
    except ValueError as exc:
        raise PolicyError(f"{path}: {prefix}detector: {exc}") from None
    if rule.eval_group is not None:
        from evalstop.detectors.fleet import FleetNoise

        try:
            make_detector(rule.detector_spec(), mode=rule.mode, fleet=FleetNoise())
        except ValueError as exc:
            raise PolicyError(f"{path}: {prefix}eval_group: {exc}") from None
    _check_shadow(rule.shadow, rule.mode, f"{path}: {prefix}shadow")
    try:
        rule.shell_action()  # checked exactly as the controller will build it
    except ValueError as exc:
        raise PolicyError(f"{path}: {prefix}action: {exc}") from None
    return rule


MAX_SHADOW_RULES = 16  # candidates per tenant: each costs a detector per job


def _check_shadow(specs: tuple[str, ...], mode: str, where: str) -> None:
    if len(specs) > MAX_SHADOW_RULES:
        raise PolicyError(f"{where}: at most {MAX_SHADOW_RULES} rules, got {len(specs)}")
    for spec in specs:
        try:
            make_detector(spec, mode=mode)
        except ValueError as exc:
            raise PolicyError(f"{where}: {show(spec)}: {exc}") from None


def _value(key: str, v: Any, where: str) -> Any:
    if key in ("metric", "detector", "eval_group", "action", "checkpoint_template",
               "checkpoint_root"):
        if not isinstance(v, str) or not v.strip() or any(ord(c) < 32 for c in v):
            raise PolicyError(f"{where}: must be a non-empty string without control "
                              "characters")
        if key == "checkpoint_root" and not v.startswith("/"):
            raise PolicyError(f"{where}: must be an absolute path")
        return v
    if key == "mode":
        if v not in ("max", "min"):
            raise PolicyError(f"{where}: must be \"max\" or \"min\", got {v!r}")
        return v
    if key == "dry_run":
        if not isinstance(v, bool):
            raise PolicyError(f"{where}: must be true or false")
        return v
    if key == "eval_n":
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**9:
            raise PolicyError(f"{where}: must be an integer in 1..1e9 (items graded per eval)")
        return v
    if key == "sigma":
        if (isinstance(v, bool) or not isinstance(v, int | float)
                or not (math.isfinite(v) and v > 0)):
            raise PolicyError(f"{where}: must be a finite number > 0")
        return float(v)
    if key == "rotated":
        return _rotated(v, where)
    if key == "gpus":
        if (isinstance(v, bool) or not isinstance(v, int | float)
                or not (math.isfinite(v) and 0 < v <= 1e6)):
            raise PolicyError(f"{where}: must be a number in (0, 1e6] (GPUs per job)")
        return float(v)
    if key == "shadow":
        if (not isinstance(v, list)
                or not all(isinstance(s, str) and s.strip() and s.isprintable() for s in v)):
            raise PolicyError(f"{where}: must be a list of detector specs, e.g. "
                              "[\"evalstop:k=2\", \"default:sigma=0.01\"]")
        return tuple(dict.fromkeys(v))
    if key == "mlflow_experiments":
        ids = [str(x) if isinstance(x, int) and not isinstance(x, bool) else x
               for x in (v if isinstance(v, list) else [None])]
        if not ids or not all(isinstance(x, str) and MLFLOW_ID.fullmatch(x) for x in ids):
            raise PolicyError(f"{where}: must be a non-empty list of MLflow experiment ids "
                              "(e.g. [\"12\", \"40\"])")
        return tuple(dict.fromkeys(ids))
    if key == "mlflow_user":
        if not isinstance(v, str) or not v.strip() or not v.isprintable() or len(v) > 256:
            raise PolicyError(f"{where}: must be an MLflow user name (printable, 1-256 "
                              "characters)")
        return v
    # allow
    if (not isinstance(v, list) or not v
            or not all(isinstance(s, str) and s for s in v)):
        raise PolicyError(f"{where}: must be a non-empty list of job-name globs")
    return tuple(v)


def _rotated(v: Any, where: str) -> tuple[str, ...]:
    """Rotated-log name patterns (``rotation``): one string or a list of them."""
    from evalstop.integrations.watch import rotation

    patterns = [v] if isinstance(v, str) else v
    if not isinstance(patterns, list) or not patterns:
        raise PolicyError(f"{where}: must be a pattern or a non-empty list of patterns "
                          "(e.g. \"{name}.{n}.gz\")")
    for pat in patterns:
        why = rotation.problem(pat)
        if why is not None:
            raise PolicyError(f"{where}: {show(str(pat))}: {why}")
    return tuple(patterns)


class PolicyTenancy(Tenancy):
    """Tenants from a policy: a source belongs to the first tenant whose ``sources`` globs
    match its path under the watched root; no match, no owner (refused, logged once).
    Each tenant's eval is its rule's ``metric``."""

    def __init__(self, policy: Policy, job_prefix: str | None = None) -> None:
        super().__init__(None, job_prefix)
        self.policy = policy
        for rule in policy.rules:  # known now: refused at start, not per log
            problem = self.separator_problem(rule.tenant)
            if problem is not None:
                raise PolicyError(f"{policy.path}: tenants.{rule.tenant}: {problem}")

    def tenant(self, root: str, source: str, *, suffix: str = "") -> str:
        rel = os.path.relpath(source, root).replace(os.sep, "/")
        rule = self.policy.rule_for(rel)
        if rule is None:
            raise Refused("tenant", f"{show(source)}: no tenant of policy "
                                    f"{show(self.policy.path)} owns it; not read")
        return rule.tenant

    def rotated(self, tenant: str) -> tuple[str, ...]:
        rule = self.policy.rule_of(tenant)
        return () if rule is None else rule.rotated

    def rotated_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for rule in self.policy.rules for p in rule.rotated))

    def metric(self, tenant: str, default: str = "eval") -> str:
        rule = self.policy.rule_of(tenant)
        return default if rule is None else rule.metric
