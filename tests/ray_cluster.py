"""A real two-node Ray cluster on this machine, for tests: a head and a second node, each
started by ``ray start --block`` on 127.0.0.1 with its own ports, its own ``--temp-dir``
and one CPU, and torn down by process id (never ``ray stop``: that would kill every Ray
on the machine, other users' too).

Every wait has a deadline; a cluster that does not come up raises ``ClusterError`` after
tearing down what it started.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

HOST = "127.0.0.1"
OBJECT_STORE = 80 * 1024 * 1024  # Ray's floor is 75 MB
UP_TIMEOUT_S = 120.0


class ClusterError(RuntimeError):
    pass


def driver_env() -> dict[str, str]:
    """The environment for every driver that connects: no usage stats, Ray's token
    authentication on (``ray start`` turns it on by default; a driver must then say so too,
    to send the token from ~/.ray/auth_token), and multi-node Ray allowed (at "0", as
    elsewhere in the tests to keep a local Ray on loopback, ``ray start --address``
    refuses to start; every node here is addressed as 127.0.0.1 instead)."""
    return {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1",
            "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}


def node_env() -> dict[str, str]:
    """The nodes' environment: a driver's, without PYTHONPATH, so a worker finds this
    checkout's evalstop only if the job ships it (runtime_env py_modules), as on a remote
    cluster."""
    env = driver_env()
    env.pop("PYTHONPATH", None)
    return env


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _free_block(n: int, rng: random.Random) -> int:
    """The first of ``n`` consecutive free ports (workers take a contiguous range)."""
    for _ in range(200):
        base = rng.randrange(20_000, 60_000 - n)
        if all(_free(base + i) for i in range(n)):
            return base
    raise ClusterError(f"no {n} consecutive free ports found")


def _ports(rng: random.Random, names: list[str]) -> dict[str, int]:
    # One block per node, so two nodes (or two test runs) never pick the same port.
    base = _free_block(len(names) + 16, rng)
    out = {name: base + i for i, name in enumerate(names)}
    out["min-worker-port"] = base + len(names)
    out["max-worker-port"] = base + len(names) + 15
    return out


_NODE_PORTS = ["node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
               "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port"]


@dataclass
class Cluster:
    address: str = ""
    temp_dirs: list[Path] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    root: Path | None = None  # holds the temp dirs and the logs

    def make_dirs(self, prefix: str, names: list[str]) -> list[Path]:
        """The cluster's folder (``root``) and a temp dir per node in it."""
        # Short paths under /tmp: Ray's unix sockets live in the temp dir (108-byte limit).
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        dirs = [self.root / name for name in names]
        for d in dirs:
            d.mkdir()
        self.temp_dirs += dirs
        return dirs

    def _start(self, args: list[str], temp_dir: Path, ports: dict[str, int],
               env: dict[str, str] | None = None) -> None:
        """One node: ``ray start --block`` of this Python's Ray, logged beside its temp
        dir, with ``env`` (default ``node_env()``)."""
        log = temp_dir.with_suffix(".log")
        self.logs.append(log)
        cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *args,
               "--node-ip-address", HOST, "--num-cpus", "1", "--num-gpus", "0",
               "--object-store-memory", str(OBJECT_STORE), "--temp-dir", str(temp_dir),
               "--disable-usage-stats", *(f"--{k}={v}" for k, v in ports.items())]
        with open(log, "wb") as fh:
            # Its own session: the node's daemons are its children, findable by pid.
            self.procs.append(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL,
                                               env=node_env() if env is None else env,
                                               cwd=temp_dir, start_new_session=True))

    def alive_nodes(self, timeout_s: float = 60.0) -> int:
        """Alive nodes whose CPUs the cluster's scheduler also sees as free, as a fresh
        driver connected to the head sees them. A node is alive in the node table before
        its resources reach the scheduler; on a loaded machine that took long enough for
        a short run to place every task on the head."""
        code = ("import ray; ray.init(address=%r, log_to_driver=False); "
                "alive = sum(1 for n in ray.nodes() if n['Alive']); "
                "cpus = int(ray.available_resources().get('CPU', 0)); "
                "print(min(alive, cpus))" % self.address)
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 timeout=timeout_s, check=False, env=driver_env())
        except subprocess.TimeoutExpired:
            return 0
        lines = out.stdout.strip().splitlines()
        return int(lines[-1]) if out.returncode == 0 and lines and lines[-1].isdigit() else 0

    def log_tail(self, chars: int = 1500) -> str:
        return " | ".join(log.read_text(errors="replace")[-chars:] for log in self.logs
                          if log.is_file())

    def wait_for(self, n_nodes: int, deadline: float) -> None:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise ClusterError(f"a ray start process exited early: {self.log_tail()}")
            if self.alive_nodes(timeout_s=min(30.0, max(5.0, deadline - time.monotonic()))) \
                    >= n_nodes:
                return
            time.sleep(1.0)
        raise ClusterError(f"{n_nodes} Ray nodes not up within {UP_TIMEOUT_S:.0f} s: "
                           f"{self.log_tail()}")

    def processes(self) -> list[psutil.Process]:
        """What this cluster started: the ``ray start`` processes, their descendants, and
        any process whose command line names this cluster's folder (Ray daemons
        that daemonise away from their parent)."""
        found: dict[int, psutil.Process] = {}
        for p in self.procs:
            try:
                root = psutil.Process(p.pid)
                for q in [root, *root.children(recursive=True)]:
                    found[q.pid] = q
            except psutil.NoSuchProcess:
                pass
        marks = [str(self.root)] if self.root is not None else []
        for q in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(q.info["cmdline"] or ())
            if any(m in cmdline for m in marks) and q.pid != os.getpid():
                found[q.pid] = q
                try:
                    for c in q.children(recursive=True):
                        found[c.pid] = c
                except psutil.NoSuchProcess:
                    pass
        return list(found.values())

    def teardown(self) -> None:
        procs = self.processes()
        for q in procs:
            try:
                q.send_signal(signal.SIGTERM)
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(procs, timeout=10)
        for q in alive:
            try:
                q.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        for p in self.procs:  # reap our own children
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


def start_two_node_cluster(seed: int | None = None) -> Cluster:
    """Head and second node, up and joined, or a ClusterError (after teardown)."""
    rng = random.Random(seed)
    cluster = Cluster()
    try:
        head_dir, node_dir = cluster.make_dirs("evr", ["h", "n"])
        head_ports = _ports(rng, ["port", "ray-client-server-port", "dashboard-port",
                                  *_NODE_PORTS])
        cluster.address = f"{HOST}:{head_ports['port']}"
        deadline = time.monotonic() + UP_TIMEOUT_S
        cluster._start(["--head", "--include-dashboard=false"], head_dir, head_ports)
        cluster.wait_for(1, deadline)
        cluster._start(["--address", cluster.address], node_dir, _ports(rng, _NODE_PORTS))
        cluster.wait_for(2, deadline)
    except BaseException:
        cluster.teardown()
        raise
    return cluster


@contextmanager
def held(start, what: str):
    """A test's cluster from ``start()`` for the ``with`` block: a start that fails fails
    the test; afterwards it is torn down and nothing it started may outlive that."""
    import pytest

    try:
        cluster = start()
    except ClusterError as exc:
        pytest.fail(f"{what} did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.teardown()
    assert cluster.processes() == [], f"processes of the {what} outlived its teardown"
