"""Make the README's picture of the status page: a few tenants' jobs (two declining, one
rising, one noisy and flat), one controller pass over them, and the page it serves, saved
as HTML and, when Playwright and Debian's chromium are installed, as a PNG.

    python examples/watch_page_demo.py OUT_DIR
"""

from __future__ import annotations

import io
import json
import os
import sys

import numpy as np

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.status import page_html


def _curves(rng: np.random.Generator) -> dict[tuple[str, str], list[float]]:
    t = np.arange(1, 17)
    up = 0.3 + 0.4 * (1 - np.exp(-t / 5))
    hacked = np.where(t <= 8, 0.3 + 0.05 * t, 0.7 - 0.06 * (t - 8))
    return {
        ("team-math", "rl-grpo-7b"): list(hacked + 0.01 * rng.standard_normal(t.size)),
        ("team-math", "rl-grpo-1b"): list(up + 0.01 * rng.standard_normal(t.size)),
        ("team-dpo", "dpo-chat"): list(0.45 + 0.015 * rng.standard_normal(t.size)),
        ("team-new", "rl-ppo-collapse"): list(np.where(t <= 10, up, up - 0.3)[:12]),
    }


def main(out: str) -> int:
    os.makedirs(out, exist_ok=True)
    logs = os.path.join(out, "logs")
    for (tenant, job), values in _curves(np.random.default_rng(7)).items():
        os.makedirs(os.path.join(logs, tenant), exist_ok=True)
        with open(os.path.join(logs, tenant, f"{job}.jsonl"), "w") as fh:
            for step, v in enumerate(values, 1):
                fh.write(json.dumps({"job": job, "step": step * 100, "eval": round(v, 4)}) + "\n")
    db = os.path.join(out, "watch.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    store = StateStore(db)
    ctl = Controller(store, [JsonlDirSource(logs)], detector="evalstop:k=3",
                     action=None, out=io.StringIO(), err=io.StringIO())
    ctl.run_until_idle()
    ctl.close()
    html_path = os.path.join(out, "watch-page.html")
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(page_html(db, health="Healthy."))
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print(f"wrote {html_path} (no Playwright: no PNG)")
        return 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1150, "height": 600})
        page.goto("file://" + os.path.abspath(html_path))
        page.screenshot(path=os.path.join(out, "watch-page.png"), full_page=True)
        browser.close()
    print(f"wrote {html_path} and watch-page.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "watch-demo"))
