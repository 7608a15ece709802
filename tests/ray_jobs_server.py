"""A real Ray head with its dashboard (the Jobs REST API) on 127.0.0.1, for tests of
``evalstop action ray``: one node, one CPU, its own ports and ``--temp-dir``, token
authentication on with a token of its own (in a file under the head's folder, named by
``RAY_AUTH_TOKEN_PATH``: nothing is read from or written to ~/.ray, which other Rays on
the machine share). Torn down by process id as tests/ray_cluster.py does (never
``ray stop``, which would end every Ray on the machine).
"""

from __future__ import annotations

import json
import os
import random
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ray_cluster import (
    _NODE_PORTS,
    HOST,
    UP_TIMEOUT_S,
    Cluster,
    ClusterError,
    _ports,
)


def missing_dashboard() -> str | None:
    """Why this Python cannot run Ray's dashboard (``ray[default]`` missing), else None."""
    try:
        import ray.dashboard.optional_deps  # noqa: F401 - imports aiohttp_cors and the rest
    except ImportError as exc:
        return f"no ray[default] ({exc})"
    return None


def head_env(token_path: Path) -> dict[str, str]:
    """The head's environment: loopback only, no usage stats, token auth with our token,
    and no PYTHONPATH (the jobs here are shell commands)."""
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN_PATH": str(token_path)}
    for name in ("PYTHONPATH", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):
        env.pop(name, None)
    return env


@dataclass
class JobsHead(Cluster):
    dashboard: str = ""  # http://127.0.0.1:PORT
    token: str = ""
    token_path: Path | None = None

    def request(self, method: str, path: str, body: dict | None = None,
                token: str | None = None, timeout: float = 30.0) -> tuple[int, object]:
        """One Jobs API call with the head's token (or ``token``): (HTTP status, JSON)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.dashboard + path, data=data, method=method,
                                     headers={"Authorization": "Bearer "
                                              + (self.token if token is None else token),
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")

    def submit(self, entrypoint: str, submission_id: str, metadata: dict[str, str]) -> str:
        status, body = self.request("POST", "/api/jobs/", {
            "entrypoint": entrypoint, "submission_id": submission_id, "metadata": metadata,
            "entrypoint_num_cpus": 0})
        if status != 200:
            raise ClusterError(f"job {submission_id} not submitted: HTTP {status} {body}")
        return body["submission_id"]

    def status(self, submission_id: str) -> str:
        code, body = self.request("GET", f"/api/jobs/{submission_id}")
        return body.get("status", "") if code == 200 and isinstance(body, dict) else str(code)

    def wait_status(self, submission_id: str, wanted: set[str], timeout_s: float = 90.0) -> str:
        deadline = time.monotonic() + timeout_s
        seen = ""
        while time.monotonic() < deadline:
            seen = self.status(submission_id)
            if seen in wanted:
                return seen
            time.sleep(0.5)
        raise ClusterError(f"job {submission_id} is {seen!r}, not {sorted(wanted)}, after "
                           f"{timeout_s:.0f} s: {self.log_tail()}")


def start_jobs_head(seed: int | None = None) -> JobsHead:
    """The head, its dashboard answering the Jobs API, or a ClusterError (after teardown)."""
    rng = random.Random(seed)
    head = JobsHead()
    try:
        (temp_dir,) = head.make_dirs("evj", ["h"])
        head.token = secrets.token_hex(32)
        head.token_path = head.root / "token"
        head.token_path.write_text(head.token + "\n")
        head.token_path.chmod(0o600)
        ports = _ports(rng, ["port", "ray-client-server-port", "dashboard-port", *_NODE_PORTS])
        head.address = f"{HOST}:{ports['port']}"
        head.dashboard = f"http://{HOST}:{ports['dashboard-port']}"
        head._start(["--head", "--include-dashboard=true", f"--dashboard-host={HOST}"],
                    temp_dir, ports, env=head_env(head.token_path))
        deadline = time.monotonic() + UP_TIMEOUT_S
        while True:
            if head.procs[0].poll() is not None:
                raise ClusterError(f"ray start exited early: {head.log_tail()}")
            try:
                code, _ = head.request("GET", "/api/jobs/", timeout=5.0)
            except (OSError, ValueError):
                code = 0
            if code == 200:
                break
            if time.monotonic() > deadline:
                raise ClusterError(f"Ray's Jobs API not up within {UP_TIMEOUT_S:.0f} s "
                                   f"(last answer {code}): {head.log_tail()}")
            time.sleep(1.0)
    except BaseException:
        head.teardown()
        raise
    return head
