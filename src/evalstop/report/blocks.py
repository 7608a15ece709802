"""The report as a list of blocks, rendered twice: to Markdown and to self-contained HTML.

Building blocks once and rendering them twice keeps ``report.md`` and ``report.html`` the
same content by construction. Inline text may use ``**bold**``, ``code`` spans and links
to a heading of the report, ``[text](#anchor)``, the only Markdown both renderers
understand.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""

    def __post_init__(self):
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"table row has {len(row)} cells, header {len(self.header)}: {row}")


@dataclass(frozen=True)
class Image:
    path: str  # relative to the report's folder, with "/" separators
    caption: str


@dataclass(frozen=True)
class Contents:
    """The table of contents: one item per entry, its links written ``[text](#anchor)``."""

    items: tuple[str, ...]


Block = Heading | Para | Bullets | Table | Image | Contents


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it from Markdown (lower case, punctuation
    dropped, spaces to hyphens), so the report's links work in report.md on GitHub and in
    report.html alike."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def heading_anchors(blocks: list[Block]) -> dict[int, str]:
    """Each heading block's anchor, by index in ``blocks``; repeats get ``-1``, ``-2``...
    as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = {}
    for i, b in enumerate(blocks):
        if isinstance(b, Heading):
            base = slug(b.text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out[i] = base if n == 0 else f"{base}-{n}"
    return out


def contents(blocks: list[Block]) -> Contents:
    """A table of contents of ``blocks``: one item per level-2 heading, linking to it, with
    its level-3 headings' links after it."""
    anchors = heading_anchors(blocks)
    items: list[list[str]] = []
    for i, b in enumerate(blocks):
        if isinstance(b, Heading) and b.level in (2, 3):
            link = f"[{b.text}](#{anchors[i]})"
            if b.level == 2 or not items:
                items.append([link])
            else:
                items[-1].append(link)
    return Contents(tuple(head + (": " + ", ".join(subs) if subs else "")
                          for head, *subs in items))
