"""Find project history (issue numbers, rounds, seeds as history) on the docs' user pages.

User pages say what to use and how; what was measured, at which seed and in which round,
belongs on the results pages (`docs/results*.md`, `docs/benchmarks*.md`) and the changelog.
`python tests/docs_history.py` lists every hit with its page and line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY_PAGES = {"changelog.md", "benchmarks.md", "benchmarks-history.md"}

# What counts as history: an issue number (also as a path, issue11/), a round of a
# choice, and a seed quoted by number ("seed 2"; an option such as `--seed 0` is usage).
# An API name is a name: ROUND1_DEFAULT_SPEC does not match (no word boundary after "1").
PATTERNS = re.compile(
    r"\bissues?[ -]?#?\d+|issue\d+"
    r"|\bround[- ]?(?:\d|one|two|three)\b|\b(?:first|second|third|fourth) round\b"
    r"|\b(?:two|three|the) rounds\b"
    r"|(?<![-\w])seeds? \d|\bseed\d",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# A link's target is not read on the page (a results page's anchor may name an issue).
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def user_pages() -> list[Path]:
    docs = ROOT / "docs"
    pages = sorted(docs.glob("**/*.md"))
    return [p for p in pages
            if p.name not in HISTORY_PAGES and not p.name.startswith("results")]


def history_hits(text: str) -> list[tuple[int, str]]:
    """(line, matched text) of every history mention outside comments and fenced code."""
    hits, fence = [], False
    for n, line in enumerate(_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text).split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            line = _LINK_TARGET.sub("]()", line)
            hits += [(n, m.group()) for m in PATTERNS.finditer(line)]
    return hits


def main() -> int:
    bad = 0
    for page in user_pages():
        for n, hit in history_hits(page.read_text()):
            print(f"{page.relative_to(ROOT)}:{n}: {hit}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
