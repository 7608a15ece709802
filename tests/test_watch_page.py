"""The status page and the HTTP endpoints: names escaped, curves drawn, health and metrics
served; the page checked in a real headless browser (Debian's chromium via Playwright)."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest
from headless_browser import chromium_or_skip

from evalstop.integrations.watch.observe import Health, StatusServer, WatchMetrics
from evalstop.integrations.watch.page import render_page

HOSTILE = '<script>alert(1)</script>"\x1b[31m'
ROWS = [
    {"key": "a/run.jsonl:good", "job": "good", "tenant": "a", "source": "a/run.jsonl",
     "evals": 6, "best_step": 3, "best_score": 0.7, "stopped": True, "stop_step": 6,
     "state": "stopped@6", "streak": 2, "reason": "2 declines", "action": "done",
     "action_rc": 0},
    {"key": "b/x.jsonl:" + HOSTILE, "job": HOSTILE, "tenant": "b", "source": "b/x.jsonl",
     "evals": 2, "best_step": 2, "best_score": 0.2, "stopped": False, "stop_step": None,
     "state": "running", "streak": 0, "reason": "", "action": None, "action_rc": None},
]
CURVES = {"a/run.jsonl:good": [(1, 0.5), (2, 0.6), (3, 0.7), (4, 0.65), (5, 0.6), (6, 0.5)],
          "b/x.jsonl:" + HOSTILE: [(1, 0.1), (2, 0.2)]}


def test_page_escapes_names_and_marks_best_and_stop():
    html = render_page(ROWS, CURVES, fleet=[{"group": "math", "sigma": 0.021, "jobs": 2,
                                             "n": 40}])
    assert "<script>" not in html and "&lt;script&gt;" in html and "\x1b" not in html
    assert html.count('class="job-curve"') == 2
    assert html.count('class="stop"') == 1 and html.count('class="best"') == 2
    assert "math" in html and "0.021" in html


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def server():
    metrics = WatchMetrics()
    health = Health(interval=1.0)
    srv = StatusServer("127.0.0.1", 0, metrics=metrics, health=health,
                       page=lambda n: render_page(ROWS, CURVES)).start()
    yield srv, metrics, health
    srv.close()


def test_endpoints(server):
    srv, metrics, health = server
    base = "http://%s:%d" % srv.address
    metrics.evals.labels(tenant="a").inc(6)
    metrics.refused.labels(reason="bad_json").inc()
    metrics.actions.labels(outcome="done").inc()
    metrics.action_seconds.observe(0.3)
    code, text = get(base + "/metrics")
    assert code == 200
    assert 'evalstop_evals_ingested_total{tenant="a"} 6.0' in text
    assert 'evalstop_records_refused_total{reason="bad_json"} 1.0' in text
    assert "evalstop_action_seconds_count 1.0" in text
    health.committed(__import__("time").time())
    assert get(base + "/healthz") == (200, "ok\n")
    health.committed(0.0)  # a poll that committed in 1970: stale
    code, text = get(base + "/healthz")
    assert code == 503 and "ago" in text
    assert get(base + "/nope")[0] == 404
    code, html = get(base + "/")
    assert code == 200 and "evalstop watch" in html


def test_port_in_use_is_one_line(server):
    srv, metrics, health = server
    host, port = srv.address
    with pytest.raises(ValueError, match="cannot listen"):
        StatusServer(host, port, metrics=metrics, health=health, page=lambda n: "")


def open_in_browser(url: str, shot: str | None = None):
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_or_skip(),
                                    args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 700})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url, wait_until="load")
            info = page.evaluate("""() => {
                const row = document.querySelector('tr.job[data-state="stopped"]');
                const svg = row && row.querySelector('svg.job-curve');
                const line = svg && svg.querySelector('polyline.curve');
                const box = svg && svg.getBoundingClientRect();
                return {rows: document.querySelectorAll('tr.job').length,
                        points: line ? line.points.numberOfItems : 0,
                        stop: svg ? svg.querySelectorAll('line.stop').length : 0,
                        width: box ? box.width : 0,
                        scripts: document.scripts.length,
                        title: document.title};
            }""")
            if shot:
                page.screenshot(path=shot, full_page=True)
        finally:
            browser.close()
    return info, errors


def test_page_in_a_real_browser(server, tmp_path):
    chromium_or_skip()
    srv, _, _ = server
    info, errors = open_in_browser("http://%s:%d/" % srv.address, str(tmp_path / "page.png"))
    assert errors == []
    assert info["rows"] == 2 and info["scripts"] == 0  # the hostile name stayed text
    assert info["points"] == 6 and info["stop"] == 1 and info["width"] > 100


def fleet_db(path, n: int, evals: int = 4) -> str:
    """A state database of ``n`` jobs of two tenants, every third one stopped."""
    from evalstop.integrations.watch.store import ActionRow, JobRow, StateStore

    store = StateStore(str(path))
    jobs, acts, pts = [], [], []
    for i in range(n):
        src, job = f"/logs/t{i % 2}/run.jsonl", f"job-{i:06d}"
        stopped = i % 3 == 0
        jobs.append(JobRow(job, src, f"t{i % 2}", {"rule": {}}, evals, evals, 0.5, 2, 0.7,
                           stopped, evals if stopped else None, "", 0, 0.0))
        if stopped:
            acts.append(ActionRow(src, job, f"t{i % 2}", "true", "done", 0, "", 0.0, 0.0, 0.0))
        pts += [(src, job, s, 0.5 + 0.01 * s) for s in range(1, evals + 1)]
    store.save_batch(jobs, {}, [], acts, pts)
    store.close()
    return str(path)


def test_page_shows_one_page_and_never_reads_the_whole_fleet(tmp_path, monkeypatch):
    from evalstop.integrations.watch.status import page_html
    from evalstop.integrations.watch.store import StateStore

    db = fleet_db(tmp_path / "s.db", 250)

    def whole_fleet(self, *a, **k):
        raise AssertionError("the page read every job")

    for name in ("jobs", "actions", "curves"):
        monkeypatch.setattr(StateStore, name, whole_fleet)
    html = page_html(db, page=2, per_page=100)
    assert html.count('<tr class="job"') == 100
    assert "250 jobs" in html and "84 stopped" in html
    assert "Jobs 101-200 of 250, page 2 of 3" in html
    assert 'href="?page=1"' in html and 'href="?page=3"' in html
    last = page_html(db, page=3, per_page=100)
    assert last.count('<tr class="job"') == 50 and 'rel="next"' not in last
    pages = [page_html(db, page=n, per_page=100) for n in (1, 2, 3)]
    names = [m for h in pages for m in re.findall(r"<code>(job-\d+)</code>", h)]
    assert len(names) == len(set(names)) == 250  # every job on exactly one page
    assert page_html(db, page=9, per_page=100).count('<tr class="job"') == 0


def test_paginated_page_in_a_real_browser(tmp_path):
    from evalstop.integrations.watch.status import page_html

    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    db = fleet_db(tmp_path / "s.db", 7)
    srv = StatusServer("127.0.0.1", 0, metrics=None, health=Health(interval=1.0),
                       page=lambda n: page_html(db, page=n, per_page=3)).start()
    errors: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_or_skip(),
                                        args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.on("console", lambda m: errors.append(m.text) if m.type == "error"
                        else None)
                page.goto("http://%s:%d/" % srv.address, wait_until="load")  # noqa: UP031
                seen = [page.locator("tr.job").count()]
                for _ in range(2):
                    page.click('a[rel="next"]')
                    page.wait_for_load_state("load")
                    seen.append(page.locator("tr.job").count())
                url = page.url
                curves = page.locator("tr.job svg.job-curve").count()
            finally:
                browser.close()
    finally:
        srv.close()
    assert errors == []
    assert seen == [3, 3, 1] and url.endswith("?page=3") and curves == 1
