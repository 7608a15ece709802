"""The report as a reader meets it: report.html of a small run opened in headless Chromium.

Every figure is drawn at least about 600 px wide per panel at a laptop's window width, the
page logs no console or script error, every in-page link finds its anchor, and the first
screen answers before the table of contents."""

from __future__ import annotations

import pytest
from headless_browser import chromium_or_skip

from evalstop.detbench import run_detector_benchmark
from evalstop.experiments import Settings, run_experiments, select
from evalstop.report import RunInfo, write_report

# A laptop's window: the page is read at this width.
VIEWPORT = {"width": 1400, "height": 900}
MIN_PANEL_PX = 580  # "about 600 px" a panel: 2 panels side by side on a 1320 px page
SMALL = Settings(n_seeds=2, n_jobs=40)
# One study of each kind of figure: bars and examples (main, composability), lines over a
# sweep (sigma, default_rule), heatmaps (claim_map), the lab corpus's figures, and the
# detector benchmark's plots. (The frontier's panels are laid out by the same
# plots.panel_grid; its 700 simulations would double the test's time.)
STUDIES = "platform,main,composability,sigma,default_rule,claim_map,real_corpus"


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    chromium_or_skip()
    out = tmp_path_factory.mktemp("report")
    runs = run_experiments(select(STUDIES), SMALL, workers=1, progress=False)
    bench = run_detector_benchmark(out / "detectors", seed=0, quick=True, progress=False)
    files = write_report(runs, out, RunInfo(wall_s=1.0, workers=1, quick=True),
                         detectors=bench)
    return files.html


@pytest.fixture(scope="module")
def seen(report_html):
    """What the browser shows: problems, figures' sizes, links, ids and the first screen."""
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
            # The report is one self-contained file: any request off it is a fault.
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(("file:", "data:"))
                       else (problems.append(f"request: {route.request.url}"), route.abort()))
            page.goto(report_html.as_uri(), wait_until="load")
            info = page.evaluate("""() => ({
                figures: Array.from(document.images, i => ({
                    alt: i.alt, width: i.getBoundingClientRect().width,
                    columns: Number(i.dataset.columns || 1), loaded: i.complete && i.naturalWidth > 0})),
                links: Array.from(document.querySelectorAll('a[href]'), a => a.getAttribute('href')),
                ids: Array.from(document.querySelectorAll('[id]'), e => e.id),
                toc: (() => { const n = document.querySelector('nav.toc');
                              return n ? n.getBoundingClientRect().top : null; })(),
                firstScreen: document.elementsFromPoint ? (() => {
                    const ul = document.querySelector('h1 + ul');
                    return ul ? {text: ul.innerText, bottom: ul.getBoundingClientRect().bottom}
                              : null; })() : null,
            })""")
            page.screenshot(path=str(report_html.parent / "first_screen.png"))
        finally:
            browser.close()
    return problems, info


def test_the_page_opens_without_errors(seen):
    problems, info = seen
    assert not problems, "\n".join(problems)
    assert info["figures"] and all(f["loaded"] for f in info["figures"])


def test_every_figure_is_drawn_about_600_px_a_panel(seen):
    _, info = seen
    narrow = [f"{f['alt'][:70]}: {f['width']:.0f} px for {f['columns']} panel(s)"
              for f in info["figures"] if f["width"] / f["columns"] < MIN_PANEL_PX]
    assert not narrow, "\n".join(narrow)
    assert len(info["figures"]) >= 10


def test_every_link_finds_its_anchor(seen):
    _, info = seen
    ids = set(info["ids"])
    links = [h for h in info["links"] if h.startswith("#")]
    assert len(links) >= 10  # the table of contents, at least
    assert [h for h in links if h[1:] not in ids] == []
    assert all(h.startswith("#") for h in info["links"])  # nothing leaves the file


def test_the_first_screen_answers_before_the_contents(seen):
    _, info = seen
    first = info["firstScreen"]
    assert first is not None, "no verdict list right under the title"
    lines = first["text"].splitlines()
    assert [line.split("?")[0] for line in lines] == [
        "What would a platform save", "And with real runs", "Where does my fleet sit",
        "Does the paper's result hold in its own setting"]
    assert all("platform" in line for line in lines[:3])  # each names its study
    assert first["bottom"] <= VIEWPORT["height"]  # all four on the first screen
    assert info["toc"] is not None and info["toc"] > first["bottom"] - 1


def test_the_page_fits_a_1366_px_window(report_html):
    """No table wider than a 1366 px laptop window: rules are labelled by name, their
    150-character specs wrap (they made the page 1,704 px wide)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_or_skip(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.goto(report_html.as_uri(), wait_until="load")
            wide = page.evaluate("""() => {
                const w = document.documentElement.clientWidth;
                return Array.from(document.querySelectorAll('table, figure, pre'))
                    .filter(e => e.getBoundingClientRect().right > w + 1)
                    .map(e => (e.querySelector('caption') || e).innerText.slice(0, 80));
            }""")
            width = page.evaluate("document.documentElement.scrollWidth")
        finally:
            browser.close()
    assert wide == [] and width <= 1366, (width, wide)
