"""The testbed's configuration files: slurm.conf, gres.conf, slurmdbd.conf.

Everything lives under one folder; daemons listen on 127.0.0.1 on ports picked free at
start, so several testbeds (and a real Slurm) can run on one machine. Choices that make a
replay fast and its timing readable:

* ``sched/builtin`` with ``priority/basic``: strict FIFO by submission (a head job that does
  not fit blocks those behind it), the simulator's ``fifo`` base. The scheduler runs at
  every submission and job end; ``sched_interval=1`` also runs the full queue every second.
* ``KillWait``: the grace between the SIGTERM of a cancel and its SIGKILL.
* GPUs are GRES backed by plain files (``AutoDetect=off``, one ``File=`` per GPU: without
  it slurmd drops "file-less" GPUs and the node goes INVAL); ``config_overrides`` lets the
  node declare more CPUs than the machine has, so CPUs never limit a job, only GPUs.
* ``AccountingStorageEnforce=associations``: a job under an account Slurm does not know is
  refused at submission.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

NODE = "tb1"
# The folders a testbed makes in its root, beside etc/ (its configuration).
STATE_DIRS = ("state", "spool", "run", "log", "gpus", "munge", "mariadb")
PARTITION = "gpu"


@dataclass(frozen=True)
class Ports:
    slurmctld: int
    slurmd: int
    slurmdbd: int
    mariadb: int


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now (held open together while picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass(frozen=True)
class Settings:
    root: Path
    cluster: str
    gpus: int
    cpus: int
    ports: Ports
    kill_wait_s: int = 5
    db_password: str = "evalstop"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket"

    @property
    def mariadb_socket(self) -> Path:
        return self.root / "mariadb" / "mysqld.sock"

    @property
    def slurm_conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"


def slurm_conf(s: Settings) -> str:
    r = s.root
    node = (f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
            f"CPUs={s.cpus} Gres=gpu:{s.gpus} State=UNKNOWN")
    return f"""\
# Written by evalstop testbed; local cluster on 127.0.0.1.
ClusterName={s.cluster}
SlurmctldHost={socket.gethostname().split(".")[0]}(127.0.0.1)
SlurmctldPort={s.ports.slurmctld}
SlurmdPort={s.ports.slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={s.munge_socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1,batch_sched_delay=0
PriorityType=priority/basic
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={s.ports.slurmdbd}
AccountingStoragePass={s.munge_socket}
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
KillWait={s.kill_wait_s}
MinJobAge=300
InactiveLimit=0
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=30
{node}
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


def gres_conf(s: Settings) -> str:
    lines = ["# Fake GPUs: one plain file each (slurmd needs a File= per GPU).",
             f"NodeName={NODE} AutoDetect=off Name=gpu File={s.root}/gpus/gpu[0-{s.gpus - 1}]"
             if s.gpus > 1 else f"NodeName={NODE} AutoDetect=off Name=gpu File={s.root}/gpus/gpu0"]
    return "\n".join(lines) + "\n"


def slurmdbd_conf(s: Settings) -> str:
    r = s.root
    return f"""\
AuthType=auth/munge
AuthInfo=socket={s.munge_socket}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={s.ports.slurmdbd}
SlurmUser=root
DebugLevel=info
LogFile={r}/log/slurmdbd.log
PidFile={r}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={s.ports.mariadb}
StorageUser=slurm
StoragePass={s.db_password}
StorageLoc=slurm_acct_db
"""


def write_all(s: Settings) -> None:
    etc = s.root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    for sub in STATE_DIRS:
        (s.root / sub).mkdir(parents=True, exist_ok=True)
    for i in range(s.gpus):
        (s.root / "gpus" / f"gpu{i}").touch()
    (etc / "slurm.conf").write_text(slurm_conf(s))
    (etc / "gres.conf").write_text(gres_conf(s))
    dbd = etc / "slurmdbd.conf"
    dbd.write_text(slurmdbd_conf(s))
    dbd.chmod(0o600)  # slurmdbd refuses a readable file holding the database password
