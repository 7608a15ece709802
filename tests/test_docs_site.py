"""The documentation site builds with no warning: no broken link, anchor or API reference."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from docs_figures import ROOT

pytest.importorskip("mkdocs", reason="the site needs the docs extra: pip install -e '.[docs]'")
pytest.importorskip("material", reason="the site needs the docs extra: pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings_handlers.python",
                    reason="the site needs the docs extra: pip install -e '.[docs]'")


def test_site_builds_strict(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The pages the nav promises are there, the generated API reference among them.
    for page in ("index.html", "stop-rules/index.html", "reference/api/index.html",
                 "reference/cli/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    api = (tmp_path / "site" / "reference/api/index.html").read_text()
    assert "make_detector" in api and "EvalStopCallback" in api
