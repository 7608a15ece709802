""""Did you mean" for a misspelt name: the closest known one, by ``difflib``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name nearest ``word`` (case-insensitively), or None when none is close."""
    known = list(known)
    by_lower = {k.lower(): k for k in known}
    found = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" (did you mean 'X'?)"`` for the closest known name, or ``""``: for the end of an
    "unknown NAME" message."""
    hit = closest(word, known)
    return f" (did you mean {hit!r}?)" if hit is not None else ""


def unknown(what: str, word: str, known: Iterable[str]) -> str:
    """The one-line message for an unknown name: ``unknown WHAT 'x' (did you mean 'y'?);
    known: a, b, c``."""
    known = list(known)
    return f"unknown {what} {word!r}{did_you_mean(word, known)}; known: {', '.join(known)}"
