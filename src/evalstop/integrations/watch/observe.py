"""What the controller exposes while it runs: Prometheus metrics, a health check and the
status page, served by one small HTTP server thread in the controller's own process.

``/metrics``  Prometheus text format (``prometheus_client``, in ``evalstop[watch]``)
``/healthz``  200 ``ok`` while polls complete on time and no source is stuck, 503 with
              the reason otherwise (naming the stuck source)
``/``         the read-only status page (``page.render_page``)

The server only reads: the page is built from a read-only view of the state database
(opened per request, so it never shares the controller's SQLite connection), the metrics
from counters the controller updates. It binds to 127.0.0.1 unless told otherwise, and
holds to the limits of ``http_guard`` (connection cap, read timeout, request sizes).
"""

from __future__ import annotations

import hmac
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence

from evalstop.integrations._extras import require
from evalstop.integrations.watch.http_guard import GuardedHandler, GuardedHTTPServer, ServeLimits

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
                                      "eval noise a tenant's jobs of an eval group "
                                      "read", ["group", "tenant"], registry=r)

    def exposition(self) -> tuple[bytes, str]:
        return self._prom.generate_latest(self.registry), self._prom.CONTENT_TYPE_LATEST


class Health:
    """Healthy while a poll has committed within ``grace`` seconds and no source is stuck
    (a source with a ``stuck()`` method says why it holds up its jobs, e.g. an MLflow
    server that does not answer; the other sources go on meanwhile)."""

    def __init__(self, interval: float, *, grace_polls: float = 3.0,
                 sources: Sequence[object] = ()) -> None:
        self.grace = max(interval * grace_polls, 5.0)
        self.last_commit: float | None = None
        self.started = time.time()
        self.error: str | None = None
        self.sources = list(sources)

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
        for src in self.sources:
            why = src.stuck() if hasattr(src, "stuck") else None
            if why:
                return False, f"source stuck: {why}"
        return True, "ok"


class StatusServer:
    """Serve ``/metrics``, ``/healthz`` and the page on ``host:port`` in a daemon thread,
    within ``limits`` (``http_guard.ServeLimits``: connection cap, read timeout, request
    sizes).

    ``page`` is a callable taking the 1-based page number (``/?page=N``) and returning the
    page's HTML (read per request). With ``token`` set, every path but ``/healthz`` needs
    ``Authorization: Bearer TOKEN`` (``/healthz`` stays open for liveness probes).
    """

    def __init__(self, host: str, port: int, *, metrics: WatchMetrics | None,
                 health: Health, page: Callable[[int], str], token: str | None = None,
                 limits: ServeLimits | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        handler = _handler(metrics, health, page, token)
        try:
            self.httpd = GuardedHTTPServer((host, port), handler, limits or ServeLimits(),
                                           log)
        except OSError as exc:
            raise ValueError(f"--serve {host}:{port}: cannot listen: "
                             f"{exc.strerror or exc}") from None
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


MAX_PAGE = 10**6  # page numbers beyond any real fleet's (a bound on OFFSET)


def page_number(query: str) -> int | None:
    """``page=N`` of a query string (1 without one), or None when it is not 1..MAX_PAGE."""
    values = urllib.parse.parse_qs(query, max_num_fields=8).get("page", ["1"])
    v = values[-1]
    if not (v.isascii() and v.isdigit() and len(v) <= 7) or not 1 <= int(v) <= MAX_PAGE:
        return None
    return int(v)


def _authorised(header: str | None, token: bytes | None) -> bool:
    if token is None:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token)


def _handler(metrics: WatchMetrics | None, health: Health, page: Callable[[int], str],
             token: str | None):
    secret = None if token is None else token.encode()

    class Handler(GuardedHandler):
        server_version = "evalstop-watch"

        def _send(self, code: int, body: bytes, ctype: str, **headers: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            # The page has no scripts; forbid any, should a name ever slip past escaping.
            self.send_header("Content-Security-Policy",
                             "default-src 'none'; style-src 'unsafe-inline'")
            for key, value in headers.items():
                self.send_header(key.replace("_", "-"), value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _answer(self) -> tuple[int, bytes, str, dict[str, str]]:
            path, _, query = self.path.partition("?")
            if path == "/healthz":
                ok, msg = health.check()
                return (200 if ok else 503), (msg + "\n").encode(), "text/plain", {}
            if not _authorised(self.headers.get("Authorization"), secret):
                return 401, b"unauthorised\n", "text/plain", {"WWW_Authenticate": "Bearer"}
            if path == "/metrics" and metrics is not None:
                body, ctype = metrics.exposition()
                return 200, body, ctype, {}
            if path in ("/", "/index.html"):
                n = page_number(query)
                if n is None:
                    return 400, f"page must be 1..{MAX_PAGE}\n".encode(), "text/plain", {}
                return 200, page(n).encode(), "text/html; charset=utf-8", {}
            return 404, b"not found\n", "text/plain", {}

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            try:
                code, body, ctype, headers = self._answer()
            except Exception as exc:  # a page error must not take the controller down
                code, body, ctype, headers = (500, f"error: {type(exc).__name__}\n".encode(),
                                              "text/plain", {})
            self._send(code, body, ctype, **headers)  # a hang-up here: one line, no trace

        do_HEAD = do_GET

    return Handler
