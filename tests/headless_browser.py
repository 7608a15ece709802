"""The headless browser the page tests share: Debian's chromium, driven by Playwright."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium_or_skip() -> str:
    """chromium's path. Without it (or without Playwright) the test skips, except under CI,
    where it fails: .ci/run installs chromium, the test extra Playwright."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    pw = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else None
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium (.ci/run installs it)")
        pytest.skip("no chromium (apt-get install -y chromium)")
    del pw
    return path
