"""The controller's read-only status page: one HTML document, no scripts, no external
assets (so it works air-gapped and a hostile job name can do nothing but be text).

Every value that came from a tenant (job, tenant and source names, reasons, commands) goes
through ``html.escape``; curves are inline SVG built from numbers only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

_W, _H, _PAD = 320, 90, 6
PAGE_SIZE = 100  # jobs per page by default: what one page load costs is bounded by it
MAX_PAGE_SIZE = 1000


@dataclass(frozen=True, slots=True)
class Paging:
    """Which slice of the fleet a page shows: ``page`` (1-based) of ``per_page`` jobs, out
    of ``total`` jobs of which ``stopped`` are stopped."""

    page: int
    per_page: int
    total: int
    stopped: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


def _nav(p: Paging) -> str:
    first = min(p.offset + 1, p.total)
    last = min(p.offset + p.per_page, p.total)
    links = []
    if p.page > 1:
        links.append(f'<a rel="prev" href="?page={p.page - 1}">previous</a>')
    if p.page < p.pages:
        links.append(f'<a rel="next" href="?page={p.page + 1}">next</a>')
    return (f'<p class="pages">Jobs {first}-{last} of {p.total}, page {p.page} of {p.pages} '
            f"({p.per_page} per page). {' '.join(links)}</p>")

# Long names (a spec, a log's path) may break anywhere, so the page fits a laptop's window.
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:middle}
th{background:#f4f4f4}
.stopped{color:#b00020;font-weight:600}.running{color:#1a7f37}
svg{background:#fafafa;border:1px solid #e4e4e4}
.curve{fill:none;stroke:#1f6feb;stroke-width:1.5}
.best{fill:#1a7f37}.stop{stroke:#b00020;stroke-width:1.5;stroke-dasharray:3 2}
.muted{color:#777}code{font-size:12px}
.own-rule{background:#e8f0fe;border-radius:3px;padding:0 4px;font-size:12px}
td code,pre{overflow-wrap:anywhere;white-space:pre-wrap}td .muted{overflow-wrap:anywhere}
"""


def _text(v: Any) -> str:
    """Escaped for HTML, with control characters shown as ``\\xNN`` instead of sent."""
    s = str(v)
    if not s.isprintable():
        s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)
    return escape(s)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "-" if not math.isfinite(v) else f"{v:.4g}"
    return _text(v)


def curve_svg(points: Sequence[tuple[int, float]], *, best_step: int | None,
              stop_step: int | None, label: str) -> str:
    """An inline SVG of one job's evals, its best eval dotted and its stop dashed."""
    pts = [(int(s), float(v)) for s, v in points if math.isfinite(float(v))]
    if not pts:
        return '<span class="muted">no evals</span>'
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    x0, x1 = min(xs), max(xs + ([stop_step] if stop_step is not None else []))
    y0, y1 = min(ys), max(ys)
    sx = (_W - 2 * _PAD) / (x1 - x0 or 1)
    sy = (_H - 2 * _PAD) / (y1 - y0 or 1)

    def px(s: float) -> float:
        return _PAD + (s - x0) * sx

    def py(v: float) -> float:
        return _H - _PAD - (v - y0) * sy

    path = " ".join(f"{px(s):.1f},{py(v):.1f}" for s, v in pts)
    parts = [f'<svg class="job-curve" role="img" aria-label="{_text(label)}" width="{_W}" '
             f'height="{_H}" viewBox="0 0 {_W} {_H}">',
             f'<polyline class="curve" points="{path}"/>']
    best = [p for p in pts if p[0] == best_step]
    if best:
        parts.append(f'<circle class="best" cx="{px(best[0][0]):.1f}" '
                     f'cy="{py(best[0][1]):.1f}" r="3.5"><title>best</title></circle>')
    if stop_step is not None:
        x = px(stop_step)
        parts.append(f'<line class="stop" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{_H}">'
                     '<title>stop</title></line>')
    parts.append("</svg>")
    return "".join(parts)


def render_page(rows: list[dict[str, Any]], curves: dict[str, list[tuple[int, float]]], *,
                fleet: list[dict[str, Any]] | None = None, health: str = "",
                now: float | None = None, paging: Paging | None = None,
                extra: str = "") -> str:
    """The whole page. ``rows`` are ``status.status_rows`` dicts; ``curves`` maps a row's
    ``key`` (or ``job``) to its ``(step, eval)`` history. With ``paging``, ``rows`` are
    one page of the fleet and the page links to its neighbours. ``extra``: more sections,
    HTML already escaped (the shadow score), put before the jobs."""
    now = time.time() if now is None else now
    total = len(rows) if paging is None else paging.total
    stopped = (sum(1 for r in rows if r.get("stopped")) if paging is None
               else paging.stopped)
    out = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
           "<title>evalstop watch</title>",
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           f"<style>{_CSS}</style></head><body>",
           "<h1>evalstop watch</h1>",
           f'<p>{total} jobs, <span class="stopped">{stopped} stopped</span>. '
           f'{_text(health)} <span class="muted">Rendered '
           f'{escape(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now)))}; '
           "reload to refresh.</span></p>"]
    if fleet:
        out.append("<h2>Fleet noise by eval group</h2><table><tr><th>group</th>"
                   "<th>tenant</th><th>sigma read</th><th>its own</th><th>jobs</th>"
                   "<th>evals pooled</th></tr>")
        for g in fleet:
            jobs = _fmt(g.get("jobs"))
            if g.get("held") is not None:  # a shared group: from the latest few jobs
                jobs = f"its latest {_fmt(g['held'])} of {jobs}"
            out.append(f"<tr><td>{_fmt(g.get('group'))}</td><td>{_fmt(g.get('tenant'))}</td>"
                       f"<td>{_fmt(g.get('sigma'))}</td><td>{_fmt(g.get('own'))}</td>"
                       f"<td>{jobs}</td><td>{_fmt(g.get('n'))}</td></tr>")
        out.append("</table>")
    if extra:
        out.append(extra)
    out.append("<h2>Jobs</h2>")
    if paging is not None:
        out.append(_nav(paging))
    out.append("<table><tr><th>job</th><th>tenant</th><th>state</th>"
               "<th>evals</th><th>best</th><th>detector</th><th>action</th>"
               "<th>curve</th></tr>")
    for r in rows:
        key = r.get("key", r["job"])
        state_cls = "stopped" if r.get("stopped") else "running"
        detector = []
        if r.get("streak") is not None:
            detector.append(f"streak {_fmt(r['streak'])}")
        if r.get("reason"):
            detector.append(_fmt(r["reason"]))
        if r.get("rule"):
            # The name the rule was given; its full spec one click away (no script).
            detector.append(f'<details class="muted rule"><summary>rule '
                            f'{_fmt(r.get("rule_label") or r["rule"])}</summary>'
                            f'<code>{_fmt(r["rule"])}</code></details>')
        action = _fmt(r.get("action"))
        if r.get("action_rc") is not None:
            action += f" (rc {_fmt(r['action_rc'])})"
        if r.get("action_output"):
            tail = "\n".join(_text(x[-200:])
                             for x in str(r["action_output"]).strip().splitlines()[-5:])
            action += f'<pre class="muted action-output">{tail}</pre>'
        svg = curve_svg(curves.get(key, []), best_step=r.get("best_step"),
                        stop_step=r.get("stop_step") if r.get("stopped") else None,
                        label=f"eval curve of {key}")
        out.append(
            f'<tr class="job" data-state="{state_cls}"><td><code>{_fmt(r["job"])}</code>'
            f'<br><span class="muted">{_fmt(r.get("source"))}</span></td>'
            f"<td>{_fmt(r.get('tenant'))}</td>"
            f'<td class="{state_cls}">{_fmt(r.get("state"))}</td>'
            f"<td>{_fmt(r.get('evals'))}</td>"
            f"<td>step {_fmt(r.get('best_step'))}<br>{_fmt(r.get('best_score'))}</td>"
            f"<td>{'<br>'.join(detector) or '-'}</td><td>{action}</td><td>{svg}</td></tr>")
    out.append("</table></body></html>")
    return "\n".join(out)
