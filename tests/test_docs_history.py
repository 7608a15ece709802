"""The docs' user pages hold no project history: no issue numbers, rounds or seeds quoted
as history outside the results pages and the changelog (tests/docs_history.py)."""

from __future__ import annotations

import pytest
from docs_history import ROOT, history_hits, user_pages


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_user_page_holds_no_history(page):
    hits = history_hits(page.read_text())
    assert not hits, f"{page.relative_to(ROOT)}: " + "; ".join(
        f"line {n}: {text!r}" for n, text in hits)


@pytest.mark.parametrize("text, found", [
    ("chosen in issue 11's third round", ["issue 11", "third round"]),
    ("judged at seed 2, see issue11/judge.md", ["seed 2", "issue11"]),
    ("Round 1's pick and the rounds of the choice", ["Round 1", "the rounds"]),
    ("run `evalstop reproduce --seed 0` to get the same", []),
    ("`ROUND1_DEFAULT_SPEC`, an earlier pick", []),
    ("an evaluation round reports every metric", []),
    ("figure 0.92<!-- fig: benchmarks/results/issue11/seed2/judge.json x -->", []),
    ("[the results](results-default-rule.md#the-default-on-real-shaped-runs-issue-11)", []),
    ("```bash\nevalstop lab run --seed 0  # issue 4\n```", []),
])
def test_what_counts_as_history(text, found):
    assert [hit for _, hit in history_hits(text)] == found
