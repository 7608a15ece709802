"""The status page names each job's rule as the user did (`default`), its full spec one
click away, and fits a 1366 px window: a 150-character spec used as a label once made the
page 2,795 px wide, its curve column off-screen."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from headless_browser import chromium_or_skip

from evalstop.cli.main import main
from evalstop.detectors.registry import canonical
from evalstop.integrations.watch.status import page_html

CORPUS = Path(__file__).resolve().parents[1] / "src" / "evalstop" / "data" / "lab_corpus.jsonl.gz"
WIDTH = 1366


def _watched(tmp_path) -> str:
    logs = tmp_path / "logs" / "acme"
    logs.mkdir(parents=True)
    with gzip.open(CORPUS, "rt") as fh:
        (logs / "runs.jsonl").write_text("".join(fh.readline() for _ in range(300)))
    db = str(tmp_path / "watch.db")
    assert main(["watch", "--jsonl", str(tmp_path / "logs"), "--db", db, "--detector",
                 "default", "--once", "--action", "echo stopped {job} at {best_step}"]) == 0
    return db


def test_the_rule_is_labelled_as_typed_with_its_spec_beside(tmp_path, capsys):
    db = _watched(tmp_path)
    html = page_html(db)
    assert "<summary>rule default</summary>" in html
    assert f"<code>{canonical('default')} (mode max)</code>" in html
    capsys.readouterr()
    assert main(["watch", "--status", "--json", "--db", db]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {r["rule_label"] for r in rows} == {"default"}
    assert {r["rule"] for r in rows} == {f"{canonical('default')} (mode max)"}


def test_the_page_fits_a_1366_px_window(tmp_path):
    from playwright.sync_api import sync_playwright

    db = _watched(tmp_path)
    page_file = tmp_path / "page.html"
    page_file.write_text(page_html(db))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_or_skip(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 768})
            page.goto(page_file.as_uri(), wait_until="load")
            before = page.evaluate("""() => ({
                width: document.documentElement.scrollWidth,
                curve: Math.max(...[...document.querySelectorAll('svg.job-curve')]
                                  .map(s => s.getBoundingClientRect().right)),
                stopped: document.querySelectorAll('tr.job[data-state="stopped"]').length})""")
            page.screenshot(path=str(tmp_path / "page-1366.png"), full_page=True)
            page.locator("details.rule summary").first.click()
            shown = page.locator("details.rule code").first.inner_text()
            after = page.evaluate("document.documentElement.scrollWidth")
            page.screenshot(path=str(tmp_path / "page-1366-open.png"))
        finally:
            browser.close()
    assert before["stopped"] >= 1
    assert before["width"] <= WIDTH and before["curve"] <= WIDTH, before
    assert shown == f"{canonical('default')} (mode max)" and after <= WIDTH
