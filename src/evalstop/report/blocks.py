"""The report as a list of blocks, rendered twice: to Markdown and to self-contained HTML.

Building blocks once and rendering them twice keeps ``report.md`` and ``report.html`` the
same content by construction. Inline text may use ``**bold**`` and ``code`` spans, the
only Markdown both renderers understand.
"""

from __future__ import annotations

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


Block = Heading | Para | Bullets | Table | Image
