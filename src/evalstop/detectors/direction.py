"""Min/max direction, handled here and nowhere else.

Detectors work internally on "higher is better" values; a metric that should be minimised
is negated on the way in and on the way out.
"""

MODES = ("max", "min")


def sign_of(mode: str) -> float:
    if mode not in MODES:
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    return 1.0 if mode == "max" else -1.0
