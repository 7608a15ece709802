"""A real ``mlflow server`` for tests: SQLite store in a temporary folder, on 127.0.0.1 at a
free port, started by the test and torn down by its process group's id (the server runs
uvicorn and a job runner as children). Every wait has a deadline."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
UP_TIMEOUT_S = 180.0

# No telemetry (nothing leaves loopback), no long HTTP retry backoff in tests, and no job
# runner beside the server (its GenAI jobs are not used: a dozen processes less).
ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1",
       "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
       "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


ADMIN, ADMIN_PASSWORD = "admin", "admin-password-1234"


class MlflowServer:
    """With ``auth``, MLflow's basic-auth app (users and per-experiment permissions; its
    own SQLite user store in ``root``), admin ``ADMIN``/``ADMIN_PASSWORD``, and every other
    user at ``default_permission = READ``. ``workers``: its uvicorn worker processes.
    The store is ``db`` (``root/mlflow.db``), which a caller may fill before ``start``."""

    def __init__(self, root: Path, *, auth: bool = False, workers: int = 1) -> None:
        self.root = root
        self.auth = auth
        self.workers = workers
        self.port = free_port()
        self.uri = f"http://{HOST}:{self.port}"
        self.db = root / "mlflow.db"
        self.proc: subprocess.Popen | None = None

    def start(self) -> MlflowServer:
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "server.log", "wb")  # noqa: SIM115 - closed in stop()
        self._log = log
        cmd = [sys.executable, "-m", "mlflow", "server",
               "--backend-store-uri", f"sqlite:///{self.db}",
               "--default-artifact-root", str(self.root / "artifacts"),
               "--host", HOST, "--port", str(self.port), "--workers", str(self.workers)]
        env = {**os.environ, **ENV}
        if self.auth:
            ini = self.root / "basic_auth.ini"
            ini.write_text("[mlflow]\ndefault_permission = READ\n"
                           f"database_uri = sqlite:///{self.root / 'auth.db'}\n"
                           f"admin_username = {ADMIN}\nadmin_password = {ADMIN_PASSWORD}\n"
                           "authorization_function = "
                           "mlflow.server.auth:authenticate_request_basic_auth\n")
            env.update(MLFLOW_AUTH_CONFIG_PATH=str(ini),
                       MLFLOW_FLASK_SERVER_SECRET_KEY="evalstop-tests-only")
            cmd += ["--app-name", "basic-auth"]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        deadline = time.monotonic() + UP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"mlflow server exited {self.proc.returncode}: "
                                   f"{(self.root / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"mlflow server not up after {UP_TIMEOUT_S:.0f} s")

    def user_uri(self, user: str, password: str) -> str:
        """The server's URI with ``user:password@`` (what a client logs in with)."""
        return f"http://{user}:{password}@{HOST}:{self.port}"

    def stop(self) -> None:
        if self.proc is None:
            return
        pgid = self.proc.pid  # its own session: the group id is its pid
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            if not self._group_alive(pgid):
                break
            os.killpg(pgid, sig)
            deadline = time.monotonic() + wait
            while self._group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.2)
        self._log.close()
        self.proc = None

    def _group_alive(self, pgid: int) -> bool:
        self.proc.poll()  # reap the CLI process itself
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
