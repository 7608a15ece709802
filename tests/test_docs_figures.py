"""Every figure marker in README.md and docs/ quotes what its cited result file holds."""

from __future__ import annotations

import json

import pytest
from docs_figures import ROOT, check_text, documents, find_markers, parse_key


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_figures_match_their_files(doc):
    n, problems = check_text(doc.read_text(), ROOT)
    assert not problems, f"{doc.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_headline_figures_are_marked():
    # The front page's findings and the pages that hold the measurements cite their files;
    # a rewrite that drops the markers should fail here, not pass silently.
    counts = {doc.name: len(find_markers(doc.read_text())) for doc in documents()}
    assert counts["README.md"] >= 8
    assert sum(counts.values()) >= 60


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "res.json").write_text(json.dumps({
        "parts": {"synthetic (additive)": {"rows": [
            {"rule": "default", "noise": "stated", "precision": 0.9537037},
            {"rule": "default", "noise": "own", "precision": 0.949},
            {"rule": "evalstop:k=2 (paper)", "noise": "own", "precision": 0.406},
        ]}},
        "n": 82247, "delta_pct": -44.21, "nan": None, "list": [0.1, 0.25],
    }))
    (tmp_path / "r" / "sum.csv").write_text(
        "method,metric,mean\nA,recall,0.917\nA,fpr,0.588\nB,recall,0.5\nB,recall,0.6\n")
    (tmp_path / "secret.json").write_text('{"a": 1}')
    return tmp_path / "r"


def _check(root, text):
    n, problems = check_text(text, root)
    return n, problems


def test_checker_accepts_figures_that_agree(repo):
    text = (
        'p 0.954<!-- fig: res.json parts."synthetic (additive)".rows[rule=default,noise=stated].precision -->\n'
        'p 95.4%<!-- fig: res.json parts."synthetic (additive)".rows[rule=default,noise=stated].precision -->\n'
        'k2 0.41<!-- fig: res.json parts."synthetic (additive)".rows[rule="evalstop:k=2 (paper)"].precision -->\n'
        'jobs 82,247<!-- fig: res.json n --> JCT -44.2%<!-- fig: res.json delta_pct scale=1 -->\n'
        'r 91.7%<!-- fig: sum.csv [method=A,metric=recall].mean --> second 0.25<!-- fig: res.json list[1] -->\n'
        'range 0.01-0.12<!-- fig: res.json list[0] scale=1.2 --> 5%-10%<!-- fig: res.json list[0] -->\n'
        '```\nexample 9.99<!-- fig: nowhere.json x -->\n```\n'
    )
    n, problems = _check(repo, text)
    assert problems == []
    assert n == 9


@pytest.mark.parametrize("text, why", [
    ("0.955<!-- fig: res.json parts.\"synthetic (additive)\".rows[noise=stated].precision -->",
     "quoted 0.955"),
    ("95.3%<!-- fig: res.json parts.\"synthetic (additive)\".rows[noise=stated].precision -->",
     "quoted 95.3%"),
    ("0.954<!-- fig: res.json parts.\"synthetic (additive)\".rows[noise=stated].precision scale=100 -->",
     "quoted 0.954"),
    ("44.2%<!-- fig: res.json delta_pct scale=1 -->", "quoted 44.2%"),
    ("1<!-- fig: missing.json a -->", "no such file"),
    ("1<!-- fig: ../secret.json a -->", "outside the repository"),
    ("1<!-- fig: res.json parts.nope -->", "no 'nope'"),
    ("1<!-- fig: res.json list[5] -->", "no index [5]"),
    ("0.5<!-- fig: sum.csv [method=B,metric=recall].mean -->", "matches 2 rows"),
    ("0.5<!-- fig: sum.csv [method=C].mean -->", "matches 0 rows"),
    ("1<!-- fig: res.json nan -->", "not a number"),
    ("1<!-- fig: res.json -->", "needs 'FILE KEY'"),
    ("1<!-- fig: res.json n round=2 -->", "unknown marker option"),
    ("about<!-- fig: res.json n -->", "no number"),
])
def test_checker_fails_on_bad_markers(repo, text, why):
    _, problems = _check(repo, "intro\n" + text + "\n")
    assert len(problems) == 1 and why in problems[0], problems
    assert problems[0].startswith("line ")


def test_key_language():
    assert parse_key('a."b c".d[2][x=1,y="p q"].e') == ["a", "b c", "d", 2, {"x": "1", "y": "p q"}, "e"]
    with pytest.raises(ValueError):
        parse_key("a[x=1")


# mkdocs serves only docs/, so the pages show copies of the benchmark plots; a plot
# regenerated at its source must be copied again, not left stale beside its numbers.
COPIED = {"docs/figures/issue11/pr.png": "benchmarks/results/issue11/pr.png",
          "docs/figures/issue11/harm_saved.png": "benchmarks/results/issue11/harm_saved.png"}


@pytest.mark.parametrize("copy, source", sorted(COPIED.items()))
def test_copied_plots_match_their_source(copy, source):
    assert (ROOT / copy).read_bytes() == (ROOT / source).read_bytes(), (
        f"{source} changed: cp {source} {copy}")
