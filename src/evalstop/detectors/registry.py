"""Detector specs ``NAME[:key=value,...]`` (docs/stop-rules.md) and the registry behind them."""

from __future__ import annotations

from evalstop.detectors.base import Detector
from evalstop.suggest import did_you_mean, unknown

_REGISTRY: dict[str, type[Detector]] = {}
_ALIASES: dict[str, str] = {}


def register(cls: type[Detector]) -> type[Detector]:
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"detector name {cls.name!r} is empty or taken")
    _REGISTRY[cls.name] = cls
    return cls


def alias(name: str, spec: str) -> None:
    """Make ``name`` stand for a full spec (e.g. ``default``)."""
    _ALIASES[name] = spec


def available() -> list[str]:
    return sorted(_REGISTRY) + sorted(_ALIASES)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split a spec into its name and raw ``key -> value`` strings; checks syntax only."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"empty detector spec {spec!r}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    args: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not key or not value:
                raise ValueError(f"bad detector spec {spec!r}: expected key=value, got {part!r}")
            if key in args:
                raise ValueError(f"bad detector spec {spec!r}: {key!r} given twice")
            args[key] = value
    return name, args


_KIND = {int: "an int", float: "a float", bool: "true or false", str: "a string"}


def _convert(spec: str, key: str, typ: type, raw: str):
    try:
        if typ is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return raw.lower() in ("true", "1")
        if typ is int:
            return int(raw)
        return typ(raw)
    except ValueError:
        raise ValueError(
            f"bad detector spec {spec!r}: {key}={raw!r} is not {_KIND.get(typ, typ.__name__)}"
        ) from None


def make_detector(spec: str, *, mode: str = "max", fleet=None) -> Detector:
    """Build a fresh detector from a spec, e.g. ``make_detector("evalstop:k=2")``.

    ``fleet``: a ``FleetNoise`` shared by the jobs of one eval group, for the rules that
    read the eval noise (a ValueError for the others)."""
    name, args = parse_spec(spec)
    if name in _ALIASES:
        base_name, base_args = parse_spec(_ALIASES[name])
        name, args = base_name, {**base_args, **args}
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(unknown("detector", name, available()))
    kwargs = {}
    for key, raw in args.items():
        if key not in cls.PARAMS:
            known = ", ".join(cls.PARAMS) or "none"
            raise ValueError(f"unknown key {key!r}{did_you_mean(key, cls.PARAMS)} for "
                             f"detector {name!r} (keys: {known})")
        kwargs[key] = _convert(spec, key, cls.PARAMS[key][0], raw)
    if fleet is not None:
        if not getattr(cls, "reads_noise", False):
            raise ValueError(f"detector {name!r} does not read the eval noise; fleet= does "
                             f"not apply to it")
        kwargs["fleet"] = fleet
    try:
        return cls(mode=mode, **kwargs)
    except ValueError as exc:
        raise ValueError(f"bad detector spec {spec!r}: {exc}") from None


def canonical(spec: str) -> str:
    """The spec with aliases resolved and every key spelled out."""
    return make_detector(spec).spec


def reads_noise(spec: str) -> bool:
    """Whether the spec's rule reads the eval noise (so takes a ``FleetNoise``)."""
    name, _ = parse_spec(spec)
    name = parse_spec(_ALIASES[name])[0] if name in _ALIASES else name
    return bool(getattr(_REGISTRY.get(name), "reads_noise", False))


def detector_factory(spec: str, *, mode: str = "max", fleet=None):
    """A zero-argument callable making fresh detectors for ``spec``; the spec is parsed and
    checked once, not once per job. With ``fleet``, every detector shares that one
    ``FleetNoise`` (see ``make_detector``)."""
    proto = make_detector(spec, mode=mode, fleet=fleet)
    cls = type(proto)
    kwargs = {k: getattr(proto, k) for k in cls.PARAMS}
    if fleet is not None:
        kwargs["fleet"] = fleet
    return lambda: cls(mode=mode, **kwargs)
