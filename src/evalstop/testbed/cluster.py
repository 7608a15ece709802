"""A local Slurm cluster in one folder: munge, MariaDB, slurmdbd, slurmctld and slurmd,
on 127.0.0.1, with N fake GPUs and the tenants as Slurm accounts.

    with LocalCluster(folder, gpus=8, tenants=["a", "b", "c"]) as cluster:
        subprocess.run(["sbatch", ...], env=cluster.env, check=False)

``up`` starts the daemons in order and waits for each to answer; ``down`` stops them by
the pids recorded in the folder (also from another process: ``evalstop testbed down``).
Any failure while starting stops what was started and raises ``TestbedError`` with the
daemon's log tail.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Self

from evalstop.errors import InputError
from evalstop.testbed import config, procs
from evalstop.testbed.config import STATE_DIRS

PACKAGES = "slurm-wlm slurmdbd munge mariadb-server"
NEEDED = ("munged", "slurmctld", "slurmd", "slurmdbd", "sbatch", "sacct", "sacctmgr",
          "scontrol", "squeue", "scancel")
# Stopped in this order: nodes before the controller, the database last.
STOP_ORDER = ["slurmd", "slurmctld", "slurmdbd", "mariadb", "munged"]
TENANT = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,39}$")


class TestbedError(RuntimeError):
    """The testbed could not start (the message names the daemon and its log)."""


def missing_programs() -> list[str]:
    found = [p for p in NEEDED if shutil.which(p) is None]
    if shutil.which("mariadbd") is None and shutil.which("mysqld") is None:
        found.append("mariadbd")
    return found


def require_slurm() -> None:
    """Raise ``InputError`` (one line naming the Debian packages) when Slurm is missing."""
    missing = missing_programs()
    if missing:
        raise InputError(f"Slurm is not installed ({', '.join(missing)} not found): "
                         f"apt-get install -y {PACKAGES}")


def check_tenants(tenants) -> list[str]:
    out = []
    for t in tenants:
        if not TENANT.match(t):
            raise InputError(f"tenant {t!r} is not a valid Slurm account name "
                             "(lower-case letters, digits, '_', '.', '-'; at most 40)")
        if t not in out:
            out.append(t)
    if not out:
        raise InputError("at least one tenant is needed")
    return out


def _sbin(name: str) -> str:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin") or name


class LocalCluster:
    def __init__(self, root: str | Path, *, gpus: int = 8, tenants=("a", "b", "c"),
                 cpus: int | None = None, kill_wait_s: int = 5) -> None:
        if gpus < 1:
            raise InputError(f"--gpus must be >= 1, got {gpus}")
        if not 0 <= kill_wait_s <= 65533:
            raise InputError(f"kill wait must be 0..65533 s, got {kill_wait_s}")
        self.root = Path(root).resolve()
        if any(c.isspace() for c in str(self.root)):
            raise InputError(f"{self.root}: the testbed folder may not contain whitespace")
        self.tenants = check_tenants(tenants)
        self.gpus = gpus
        self.cpus = cpus or max(64, 4 * gpus)  # a job takes one CPU: CPUs never limit
        self.kill_wait_s = kill_wait_s
        self.settings: config.Settings | None = None

    # -- the environment client commands need ---------------------------------------
    @property
    def slurm_conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.slurm_conf)}

    def run(self, argv, check=True, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=kw.pop("env", self.env), capture_output=True,
                              text=True, check=check, timeout=kw.pop("timeout", 60), **kw)

    # -- up and down --------------------------------------------------------------
    def __enter__(self) -> Self:
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> LocalCluster:
        require_slurm()
        if any(procs.alive(pid, str(self.root)) for pid in procs.read_pids(self.root).values()):
            raise TestbedError(f"{self.root}: a testbed is already running there "
                               "(evalstop testbed down --dir ...)")
        self._clear_stopped()
        self.root.mkdir(parents=True, exist_ok=True)
        ports = config.Ports(*config.free_ports(4))
        # The cluster name is a table prefix in the database: short, lower-case, unique.
        self.settings = s = config.Settings(
            root=self.root, cluster=f"tb{secrets.token_hex(3)}", gpus=self.gpus,
            cpus=self.cpus, ports=ports, kill_wait_s=self.kill_wait_s,
            db_password=secrets.token_hex(12))
        config.write_all(s)
        try:
            self._munge(s)
            self._mariadb(s)
            self._slurmdbd(s)
            self._accounts(s)
            self._slurmctld(s)
            self._slurmd(s)
        except BaseException:
            self.down()
            raise
        (self.root / "env.sh").write_text(f"export SLURM_CONF={self.slurm_conf}\n")
        return self

    def down(self) -> list[str]:
        """Stop the daemons, then the jobs' processes they leave behind (slurmstepd
        outlives slurmd, and with it the job's payload); the names of what was running."""
        stopped = procs.stop_all(self.root, STOP_ORDER)
        n = procs.stop_jobs(self.root)
        return stopped + ([f"{n} job process{'es' if n > 1 else ''}"] if n else [])

    def _clear_stopped(self) -> None:
        """A folder a testbed ran in before starts afresh: the earlier run's controller
        state (its jobs, its cluster name) would not start again, so what the testbed
        itself made there goes (a replay's results live in its own --out folder). Only
        the testbed's own names, and only below a folder holding its slurm.conf."""
        if not self.slurm_conf.is_file():
            return
        for name in (*STATE_DIRS, "etc"):
            shutil.rmtree(self.root / name, ignore_errors=True)
        for name in ("env.sh", procs.PIDS):  # the pids of daemons that no longer run
            (self.root / name).unlink(missing_ok=True)

    # -- the daemons, in start order ----------------------------------------------
    def _munge(self, s: config.Settings) -> None:
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        # Other users (a tenant's uid) must reach the socket; the key stays root's alone.
        (self.root / "munge").chmod(0o755)
        proc = procs.start(self.root, "munged", [
            _sbin("munged"), "--foreground", "--force", f"--socket={s.munge_socket}",
            f"--key-file={key}", f"--pid-file={self.root}/run/munged.pid",
            f"--log-file={self.root}/log/munged.log",
            f"--seed-file={self.root}/munge/munged.seed"])
        self._wait(proc, "munged", lambda: s.munge_socket.exists(), 15)

    def _mariadb(self, s: config.Settings) -> None:
        data = self.root / "mariadb" / "data"
        tmp = self.root / "mariadb" / "tmp"  # its own: testbeds starting at once collide in /tmp
        tmp.mkdir(parents=True, exist_ok=True)
        install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
        r = subprocess.run([install, "--no-defaults", f"--datadir={data}", "--user=root",
                            "--auth-root-authentication-method=socket", "--skip-test-db",
                            f"--tmpdir={tmp}"],
                           capture_output=True, text=True, timeout=120, check=False)
        if r.returncode:
            raise TestbedError(f"mariadb-install-db failed: {r.stderr.strip()[-400:]}")
        server = _sbin("mariadbd") if shutil.which("mariadbd") else _sbin("mysqld")
        proc = procs.start(self.root, "mariadb", [
            server, "--no-defaults", f"--datadir={data}", f"--socket={s.mariadb_socket}",
            "--bind-address=127.0.0.1", f"--port={s.ports.mariadb}", "--user=root",
            f"--tmpdir={tmp}",
            f"--pid-file={self.root}/run/mariadb.pid",
            f"--log-error={self.root}/log/mariadb.log", "--innodb-buffer-pool-size=64M",
            "--skip-name-resolve", "--innodb-lock-wait-timeout=900"])
        self._wait(proc, "mariadb", lambda: self._sql("SELECT 1", check=False).returncode == 0, 60)
        pw = s.db_password
        self._sql(f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
                  "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;")

    def _sql(self, statement: str, check: bool = True) -> subprocess.CompletedProcess:
        client = shutil.which("mariadb") or shutil.which("mysql") or "mysql"
        r = subprocess.run([client, "--no-defaults", f"--socket={self.settings.mariadb_socket}",
                            "-uroot", "-e", statement], capture_output=True, text=True,
                           timeout=30, check=False)
        if check and r.returncode:
            raise TestbedError(f"MariaDB refused {statement[:40]!r}: {r.stderr.strip()}")
        return r

    def _slurmdbd(self, s: config.Settings) -> None:
        proc = procs.start(self.root, "slurmdbd", [_sbin("slurmdbd"), "-D"], env=self.env)
        self._wait(proc, "slurmdbd", lambda: _listening(s.ports.slurmdbd), 60)

    def _accounts(self, s: config.Settings) -> None:
        def sacctmgr(*args):
            r = self.run(["sacctmgr", "-i", *args], check=False)
            if r.returncode:
                raise TestbedError(f"sacctmgr {' '.join(args)}: {r.stderr.strip() or r.stdout}")

        sacctmgr("add", "cluster", s.cluster)
        sacctmgr("add", "account", ",".join(self.tenants), f"cluster={s.cluster}")
        # Jobs are submitted as the user running the testbed, under each tenant's account.
        sacctmgr("add", "user", _user(), f"account={','.join(self.tenants)}",
                 f"cluster={s.cluster}", f"defaultaccount={self.tenants[0]}")

    def _slurmctld(self, s: config.Settings) -> None:
        proc = procs.start(self.root, "slurmctld",
                    [_sbin("slurmctld"), "-D", "-i", "-f", str(self.slurm_conf)], env=self.env)
        self._wait(proc, "slurmctld", lambda: self.run(["scontrol", "ping"], check=False,
                                                 timeout=10).stdout.count("UP") > 0, 60)

    def _slurmd(self, s: config.Settings) -> None:
        proc = procs.start(self.root, "slurmd", [_sbin("slurmd"), "-D", "-f", str(self.slurm_conf),
                                          "-N", config.NODE], env=self.env)

        def idle():
            r = self.run(["sinfo", "-h", "-N", "-o", "%T"], check=False, timeout=10)
            return r.stdout.strip() == "idle"

        self._wait(proc, "slurmd", idle, 60)

    def _wait(self, proc: subprocess.Popen, name: str, ready, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        logs = self.root / "log"
        tail = _tail(logs / f"{name}.log") or _tail(logs / f"{name}.out")
        raise TestbedError(f"{name} did not start (see {logs}/): {tail}")


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, n: int = 3) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])
