"""An HTTP server that a hostile or careless client cannot exhaust.

``http.server`` alone waits for ever on a connection that sends nothing, starts a thread
(and holds a file descriptor) for every connection, and prints a traceback when a client
hangs up early. That let idle connections take every file descriptor of the controller,
which then could not open a single log. Here:

* **connection cap** (``max_connections``, default 64): at most that many connections are
  open at once. A connection arriving at the cap closes the oldest one that has not yet
  sent a whole request head (an idle or slow client), so a real request is still served
  at once; when every open connection is inside a request, the newcomer is closed.
* **read timeout** (``read_timeout``, default 10 s): the longest wait for one read or one
  write on a connection; past it the connection is closed.
* **request-size limits**: a request line longer than ``max_request_line`` (4 KiB) is
  answered 414; request headers over ``max_header_bytes`` (16 KiB) in all or more than
  ``max_headers`` (50) lines are answered 431. Only one request per connection (HTTP/1.0),
  so no connection sits idle between requests.
* **aborted clients** cost at most one log line (no traceback), and all of them together
  one line a minute.
"""

from __future__ import annotations

import io
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_CONNECTIONS = 64
READ_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class ServeLimits:
    """The page server's limits (see the module doc); the defaults are documented."""

    max_connections: int = MAX_CONNECTIONS
    read_timeout: float = READ_TIMEOUT
    max_request_line: int = 4096
    max_header_bytes: int = 16384
    max_headers: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.max_connections <= 65536:
            raise ValueError(f"max_connections must be in 1..65536, got {self.max_connections}")
        if not 0 < self.read_timeout <= 3600:
            raise ValueError(f"read_timeout must be in (0, 3600] s, got {self.read_timeout}")


def _stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")


class GuardedHTTPServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` with a connection cap that evicts the oldest connection
    still without a request head. Its handler must derive from :class:`GuardedHandler`."""

    daemon_threads = True
    # The kernel's queue of connections not yet accepted: they hold no descriptor of ours,
    # and a burst of them must not make a real client wait for a SYN retry.
    request_queue_size = 128
    QUIET_SECONDS = 60.0  # a line about hung-up clients at most this often

    def __init__(self, address: tuple[str, int], handler: type[GuardedHandler],
                 limits: ServeLimits, log: Callable[[str], None] | None = None) -> None:
        self.limits = limits
        self.log = log or _stderr_line
        self._lock = threading.Lock()
        # open connection -> [accepted at (monotonic), inside a request]
        self._open: dict[socket.socket, list] = {}
        self._quiet_until = 0.0
        self._hidden = 0  # hung-up clients not written about since the last line
        super().__init__(address, handler)

    def open_connections(self) -> int:
        with self._lock:
            return len(self._open)

    def process_request(self, request, client_address) -> None:
        with self._lock:
            if len(self._open) >= self.limits.max_connections and not self._evict_idle():
                refuse = True
            else:
                refuse = False
                self._open[request] = [time.monotonic(), False]
        if refuse:  # every open connection is inside a request: no room for another
            super().shutdown_request(request)
            return
        request.settimeout(self.limits.read_timeout)
        super().process_request(request, client_address)

    def _evict_idle(self) -> bool:
        """Close the oldest connection without a request head (lock held)."""
        idle = [(t, s) for s, (t, busy) in self._open.items() if not busy]
        if not idle:
            return False
        _, victim = min(idle, key=lambda ts: ts[0])
        del self._open[victim]
        try:  # its thread's blocked read returns at once, and the thread closes it
            victim.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def mark_busy(self, request) -> None:
        with self._lock:
            entry = self._open.get(request)
            if entry is not None:
                entry[1] = True

    def shutdown_request(self, request) -> None:
        with self._lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request, client_address) -> None:
        """One line, never a traceback; clients that hang up or stall (routine, and what a
        flood of idle connections does) get one line per QUIET_SECONDS with a count."""
        exc = sys.exc_info()[1]
        host = client_address[0] if client_address else "?"
        if not isinstance(exc, ConnectionError | TimeoutError):
            self.log(f"evalstop watch: http request from {host} failed: "
                     f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            now = time.monotonic()
            if now < self._quiet_until:
                self._hidden += 1
                return
            hidden, self._hidden, self._quiet_until = self._hidden, 0, now + self.QUIET_SECONDS
        more = f"; {hidden} more since the last such line" if hidden else ""
        self.log(f"evalstop watch: http client {host} hung up or stalled "
                 f"({type(exc).__name__}); connection closed{more}")


class GuardedHandler(BaseHTTPRequestHandler):
    """Reads the request head within the server's size limits before ``http.server``
    parses it; one request per connection."""

    protocol_version = "HTTP/1.0"

    def handle_one_request(self) -> None:
        self.close_connection = True
        limits: ServeLimits = self.server.limits
        line = self.rfile.readline(limits.max_request_line + 1)
        if not line:
            return
        if len(line) > limits.max_request_line or not line.endswith(b"\n"):
            self._refuse(414, f"request line over {limits.max_request_line} bytes")
            return
        head = _read_head(self.rfile, limits)
        if head is None:
            self._refuse(431, f"request headers over {limits.max_header_bytes} bytes or "
                              f"{limits.max_headers} lines")
            return
        self.raw_requestline = line
        self._socket_rfile, self.rfile = self.rfile, io.BytesIO(head)
        if not self.parse_request():
            return
        self.server.mark_busy(self.connection)
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.send_error(501, f"unsupported method ({self.command!r})")
            return
        method()
        self.wfile.flush()

    def _refuse(self, code: int, why: str) -> None:
        self.requestline, self.request_version, self.command = "", "HTTP/1.0", ""
        self.send_error(code, why)

    def finish(self) -> None:
        super().finish()
        sock_rfile = getattr(self, "_socket_rfile", None)
        if sock_rfile is not None:  # the socket's own reader, replaced by the parsed head
            sock_rfile.close()

    def log_message(self, *args) -> None:  # quiet: the controller logs, not this
        pass


def _read_head(rfile, limits: ServeLimits) -> bytes | None:
    """The header lines up to and including the blank line, or None past a limit."""
    out = bytearray()
    for _ in range(limits.max_headers + 1):
        room = limits.max_header_bytes - len(out)
        line = rfile.readline(room + 1)
        if len(line) > room:
            return None
        out += line
        if line in (b"\r\n", b"\n", b""):
            return bytes(out)
    return None
