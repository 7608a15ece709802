"""The page server under hostile clients: idle connections cannot take the controller's
file descriptors, a silent client is cut off, oversized requests are refused, a client that
hangs up early costs at most one line, and a token guards everything but /healthz."""

from __future__ import annotations

import os
import socket
import struct
import time
import urllib.error
import urllib.request

import pytest

from evalstop.integrations.watch.http_guard import MAX_CONNECTIONS, ServeLimits
from evalstop.integrations.watch.observe import Health, StatusServer, WatchMetrics

TOKEN = "s3cret-token-0123456789"


def serve(page=lambda n: f"<p>page {n}</p>", **kw) -> StatusServer:
    health = Health(interval=1.0)
    health.committed(time.time())
    return StatusServer("127.0.0.1", 0, metrics=WatchMetrics(), health=health, page=page,
                        **kw).start()


def get(url: str, headers: dict | None = None, timeout: float = 5.0) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def base(srv: StatusServer) -> str:
    return "http://%s:%d" % srv.address  # noqa: UP031


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def idle_clients(srv: StatusServer, n: int) -> list[socket.socket]:
    return [socket.create_connection(srv.address, timeout=5) for _ in range(n)]


def test_idle_connections_cannot_take_the_file_descriptors():
    srv = serve()  # the default cap
    before = open_fds()
    clients = idle_clients(srv, MAX_CONNECTIONS + 60)
    try:
        t0 = time.monotonic()
        assert get(base(srv) + "/healthz") == (200, "ok\n")
        assert time.monotonic() - t0 < 5  # at once, not after the idle ones time out
        # Our clients hold one descriptor each; the server at most its cap (+ slack for a
        # connection being closed as it is evicted).
        server_fds = open_fds() - before - len(clients)
        assert server_fds <= MAX_CONNECTIONS + 4, server_fds
        assert srv.httpd.open_connections() <= MAX_CONNECTIONS
    finally:
        for c in clients:
            c.close()
        srv.close()


def test_a_small_cap_evicts_the_oldest_idle_connection():
    srv = serve(limits=ServeLimits(max_connections=3, read_timeout=60))
    clients = idle_clients(srv, 20)
    try:
        for _ in range(3):
            assert get(base(srv) + "/healthz", timeout=3) == (200, "ok\n")
        assert srv.httpd.open_connections() <= 3
        clients[0].settimeout(3)
        assert clients[0].recv(10) == b""  # the oldest idle one was closed for room
    finally:
        for c in clients:
            c.close()
        srv.close()


def test_a_silent_client_is_cut_off_after_the_read_timeout():
    srv = serve(limits=ServeLimits(read_timeout=0.3))
    (client,) = idle_clients(srv, 1)
    try:
        client.settimeout(10)
        t0 = time.monotonic()
        assert client.recv(10) == b""  # the server closed it
        assert time.monotonic() - t0 < 5
    finally:
        client.close()
        srv.close()


def raw_request(srv: StatusServer, data: bytes) -> bytes:
    with socket.create_connection(srv.address, timeout=5) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize("data, code", [
    (b"GET /" + b"a" * 5000 + b" HTTP/1.0\r\n\r\n", b"414"),
    (b"GET / HTTP/1.0\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", b"431"),
    (b"GET / HTTP/1.0\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(60)) + b"\r\n",
     b"431"),
    (b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n", b"200"),
])
def test_request_size_limits(data, code):
    srv = serve()
    try:
        assert raw_request(srv, data).split(b" ", 2)[1] == code
    finally:
        srv.close()


def hang_up_early(srv: StatusServer) -> None:
    s = socket.create_connection(srv.address, timeout=5)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    s.recv(1)  # the answer has started
    # Reset, not a clean close: the server's next write fails at once.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_a_client_that_hangs_up_early_costs_at_most_one_line(capfd):
    big = "x" * (8 << 20)
    srv = serve(page=lambda n: big)
    try:
        for _ in range(5):
            hang_up_early(srv)
        time.sleep(0.5)
        assert get(base(srv) + "/healthz") == (200, "ok\n")
    finally:
        srv.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert len(err.splitlines()) <= 5, err  # one line per aborted client at most


def test_a_token_guards_all_but_healthz():
    srv = serve(token=TOKEN)
    try:
        assert get(base(srv) + "/")[0] == 401
        assert get(base(srv) + "/metrics", {"Authorization": "Bearer wrong"})[0] == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert get(base(srv) + "/?page=2", auth) == (200, "<p>page 2</p>")
        assert get(base(srv) + "/metrics", auth)[0] == 200
        assert get(base(srv) + "/healthz") == (200, "ok\n")  # probes need no token
    finally:
        srv.close()


@pytest.mark.parametrize("query, code", [("", 200), ("?page=3", 200), ("?page=0", 400),
                                         ("?page=-1", 400), ("?page=x", 400),
                                         ("?page=99999999999", 400)])
def test_page_numbers(query, code):
    srv = serve()
    try:
        assert get(base(srv) + "/" + query)[0] == code
    finally:
        srv.close()
