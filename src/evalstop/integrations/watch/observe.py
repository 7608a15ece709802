"""What the controller exposes while it runs: Prometheus metrics, a health check and the
status page, served by one small HTTP server thread in the controller's own process.

``/metrics``  Prometheus text format (``prometheus_client``, in ``evalstop[watch]``)
``/healthz``  200 ``ok`` while polls complete on time, 503 with the reason otherwise
``/``         the read-only status page (``page.render_page``)

The server only reads: the page is built from a read-only view of the state database
(opened per request, so it never shares the controller's SQLite connection), the metrics
from counters the controller updates. It binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalstop.integrations._extras import require

# Buckets for action latency: stop commands take from milliseconds to minutes.
_ACTION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class WatchMetrics:
    """The controller's counters, in a registry of their own (not the global one, so two
    controllers in one process, as in tests, do not collide)."""

    def __init__(self) -> None:
        prom = require("prometheus_client", what="evalstop watch --serve", extra="watch")
        self._prom = prom
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.evals = prom.Counter("evalstop_evals_ingested", "eval records fed to a detector",
                                  ["tenant"], registry=r)
        self.refused = prom.Counter("evalstop_records_refused",
                                    "records or files refused, by reason", ["reason"],
                                    registry=r)
        self.stops = prom.Counter("evalstop_stops", "stop decisions", ["tenant"], registry=r)
        self.actions = prom.Counter("evalstop_actions", "stop actions finished, by outcome",
                                    ["outcome"], registry=r)
        self.action_seconds = prom.Histogram("evalstop_action_seconds",
                                             "wall time of a stop action",
                                             buckets=_ACTION_BUCKETS, registry=r)
        self.ingest_lag = prom.Gauge(
            "evalstop_ingest_lag_seconds",
            "seconds from the start of the last completed poll to its commit", registry=r)
        self.last_poll = prom.Gauge("evalstop_last_poll_timestamp_seconds",
                                    "unix time of the last committed poll", registry=r)
        self.jobs = prom.Gauge("evalstop_jobs_followed", "jobs known, by state", ["state"],
                               registry=r)
        self.fleet_sigma = prom.Gauge("evalstop_fleet_noise_sigma",
                                      "pooled eval noise of an eval group", ["group"],
                                      registry=r)

    def exposition(self) -> tuple[bytes, str]:
        return self._prom.generate_latest(self.registry), self._prom.CONTENT_TYPE_LATEST


class Health:
    """Healthy while a poll has committed within ``grace`` seconds."""

    def __init__(self, interval: float, *, grace_polls: float = 3.0) -> None:
        self.grace = max(interval * grace_polls, 5.0)
        self.last_commit: float | None = None
        self.started = time.time()
        self.error: str | None = None

    def committed(self, when: float) -> None:
        self.last_commit = when
        self.error = None

    def check(self, now: float | None = None) -> tuple[bool, str]:
        now = time.time() if now is None else now
        if self.error:
            return False, f"last poll failed: {self.error}"
        ref = self.last_commit if self.last_commit is not None else self.started
        age = now - ref
        if age > self.grace:
            what = "last poll committed" if self.last_commit is not None else "started"
            return False, f"{what} {age:.0f}s ago (limit {self.grace:.0f}s)"
        return True, "ok"


class StatusServer:
    """Serve ``/metrics``, ``/healthz`` and the page on ``host:port`` in a daemon thread.

    ``page`` is a zero-argument callable returning the page's HTML (read per request).
    """

    def __init__(self, host: str, port: int, *, metrics: WatchMetrics | None,
                 health: Health, page: Callable[[], str]) -> None:
        handler = _handler(metrics, health, page)
        try:
            self.httpd = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise ValueError(f"--serve {host}:{port}: cannot listen: "
                             f"{exc.strerror or exc}") from None
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="evalstop-http",
                                       daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> StatusServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(metrics: WatchMetrics | None, health: Health, page: Callable[[], str]):
    class Handler(BaseHTTPRequestHandler):
        server_version = "evalstop-watch"

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            # The page has no scripts; forbid any, should a name ever slip past escaping.
            self.send_header("Content-Security-Policy",
                             "default-src 'none'; style-src 'unsafe-inline'")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            try:
                if path == "/metrics" and metrics is not None:
                    body, ctype = metrics.exposition()
                    self._send(200, body, ctype)
                elif path == "/healthz":
                    ok, msg = health.check()
                    self._send(200 if ok else 503, (msg + "\n").encode(), "text/plain")
                elif path in ("/", "/index.html"):
                    self._send(200, page().encode(), "text/html; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain")
            except Exception as exc:  # a page error must not take the controller down
                self._send(500, f"error: {type(exc).__name__}\n".encode(), "text/plain")

        do_HEAD = do_GET

        def log_message(self, *args: Any) -> None:  # quiet: the controller logs, not this
            pass

    return Handler
