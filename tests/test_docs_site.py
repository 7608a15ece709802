"""The documentation site: ``mkdocs build --strict`` on the repo's mkdocs.yml passes, and
every page it builds opens in a real headless browser (Debian's chromium via Playwright)
with no console error, no failed request for the site's own files and no broken link
within the site.

Without mkdocs (the ``docs`` extra) or chromium these tests skip, except under CI (the
``CI`` variable set), where they fail: CI installs both.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from headless_browser import chromium_or_skip

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mkdocs.yml"


def mkdocs_or_skip() -> None:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI must have mkdocs: the test command installs the docs extra")
        pytest.skip("no mkdocs (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """``(mkdocs's return code, its log, the built site's folder)``, built once."""
    mkdocs_or_skip()
    if not CONFIG.is_file():
        pytest.fail(f"{CONFIG} is missing: the documentation site is built from it")
    site = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(CONFIG),
         "--site-dir", str(site)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # a theme banner, not a problem
    return proc.returncode, proc.stdout, site


@pytest.fixture(scope="module")
def site(build):
    rc, log, folder = build
    if rc != 0:
        pytest.fail("the site did not build (see test_site_builds_strict)")
    return folder


def test_site_builds_strict(build):
    rc, log, site = build
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert rc == 0 and not warnings, "mkdocs build --strict failed:\n" + log
    assert (site / "index.html").is_file()


def test_api_signatures_are_wrapped_to_the_page(site):
    """mkdocstrings writes a signature on one line unless it can format it (ruff, in the
    docs extra): `Controller(...)` came out 3,000 px wide."""
    import html
    import re

    page = (site / "reference" / "api" / "index.html").read_text()
    sigs = [html.unescape(re.sub(r"<[^>]+>", "", s)) for s in
            re.findall(r'<div class="doc-signature[^"]*"><pre>(.*?)</pre>', page, re.DOTALL)]
    assert len(sigs) >= 10
    long = [line for s in sigs for line in s.splitlines() if len(line) > 90]
    assert not long, f"{len(long)} signature line(s) over 90 characters, e.g. {long[0]!r}"


def _url_prefix() -> str:
    """The path the site is published under (site_url's, e.g. /evalstop/), so that pages
    that link absolutely, like 404.html, find their files when served here too."""
    from mkdocs.config import load_config

    path = urlsplit(load_config(str(CONFIG)).site_url or "/").path
    return "/" + path.strip("/") + "/" if path.strip("/") else "/"


class _Handler(SimpleHTTPRequestHandler):
    prefix = "/"

    def translate_path(self, path):
        path = urlsplit(path).path
        if not path.startswith(self.prefix):
            return str(Path(self.directory) / "no such file")
        return super().translate_path("/" + path[len(self.prefix):])

    def log_message(self, *args):  # keep the test's output to its failures
        pass


@pytest.fixture(scope="module")
def served(site):
    """The built site on a local port: ``(base URL, site folder)``."""
    prefix = _url_prefix()
    handler = functools.partial(type("Handler", (_Handler,), {"prefix": prefix}),
                                directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix}", site
    finally:
        server.shutdown()
        server.server_close()


def pages(site: Path) -> list[str]:
    """Every built page, as the path a reader's browser asks for (a folder's index.html
    as the folder); 404.html included."""
    out = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        out.append(rel[: -len("index.html")] if html.name == "index.html" else rel)
    return out


@pytest.fixture(scope="module")
def visited(served):
    """Open every page: ``{page: (problems, link targets, element ids)}``. Requests off
    the site (e.g. web fonts) are refused, so the test needs no network and shows what a
    reader offline would see; their failures are not counted."""
    chromium = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    base, site = served
    found: dict[str, tuple[list[str], list[str], set[str]]] = {}

    def local(url: str) -> bool:
        return url.startswith(base) or url.startswith(("data:", "blob:"))

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            context = browser.new_context()
            context.route("**/*", lambda route: route.continue_() if local(route.request.url)
                          else route.abort())
            for rel in pages(site):
                problems: list[str] = []
                page = context.new_page()
                page.on("console", lambda m, problems=problems: problems.append(
                    f"console {m.type}: {m.text} ({m.location.get('url', '')})")
                    if m.type == "error" and local(m.location.get("url") or base) else None)
                page.on("pageerror", lambda e, problems=problems: problems.append(
                    f"script error: {e}"))
                page.on("requestfailed", lambda r, problems=problems: problems.append(
                    f"request failed: {r.url} ({r.failure})") if local(r.url) else None)
                page.on("response", lambda r, problems=problems: problems.append(
                    f"HTTP {r.status}: {r.url}") if r.status >= 400 and local(r.url) else None)
                page.goto(base + rel, wait_until="load")
                # Scripts that run after load (the search index, the theme's) get to fail too.
                page.wait_for_load_state("networkidle")
                links, ids = page.evaluate("""() => [
                    Array.from(document.querySelectorAll('a[href]'), a => a.href),
                    Array.from(document.querySelectorAll('[id]'), e => e.id)]""")
                found[rel] = (problems, links, set(ids))
                page.close()
        finally:
            browser.close()
    return found


def test_every_page_opens_without_errors(visited):
    assert "" in visited  # the front page was among them
    bad = {rel: problems for rel, (problems, _, _) in visited.items() if problems}
    assert not bad, "\n".join(f"{rel or 'index'}: {p}" for rel, ps in bad.items() for p in ps)


def test_links_within_the_site_resolve(served, visited):
    """Every link to the site's own pages and files reaches one, and a link to a section
    (#anchor) finds an element with that id on the target page."""
    base, site = served
    broken = []
    for rel, (_, links, _) in visited.items():
        for link in links:
            if not link.startswith(base):
                continue
            url, anchor = urldefrag(link)
            target = unquote(urlsplit(url).path)[len(urlsplit(base).path):]
            if target in visited:
                if anchor and unquote(anchor) not in visited[target][2]:
                    broken.append(f"{rel or 'index'}: {link} (no such anchor)")
            elif not (site / target).is_file():
                broken.append(f"{rel or 'index'}: {link} (no such page or file)")
    assert not broken, "\n".join(sorted(set(broken)))
