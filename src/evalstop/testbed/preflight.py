"""What a replay checks on the cluster before it submits anything, so that a mistake ends
in one line naming it instead of a half-submitted workload: a Slurm configuration that
the client commands find, every tenant an account the user may submit to, and as many
GPUs as ``--gpus`` says (a job larger than the cluster would pend for ever).

A check the cluster cannot answer (no accounting, a site that hides ``sacctmgr``) is
skipped: ``sbatch`` still refuses what Slurm refuses, in one line too.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from pathlib import Path

from evalstop.errors import InputError

DEFAULT_CONF = Path("/etc/slurm/slurm.conf")
_GPU = re.compile(r"gpu(?::[^:,()]+)?:(\d+)")


def slurm_env(env: dict, testbed: str | None) -> dict:
    """``env`` pointing the client commands at a testbed folder (``--dir``), or as it is
    when ``SLURM_CONF`` or ``/etc/slurm/slurm.conf`` exists; else one line saying where
    a configuration was looked for. A configless site (no file, found by DNS) passes once
    ``sinfo`` answers."""
    if testbed is not None:
        conf = Path(testbed).resolve() / "etc" / "slurm.conf"
        if not conf.is_file():
            raise InputError(f"--dir {testbed}: no testbed there (start one with "
                             f"evalstop testbed up --dir {testbed})")
        return {**env, "SLURM_CONF": str(conf)}
    given = env.get("SLURM_CONF")
    if given and not Path(given).is_file():
        raise InputError(f"SLURM_CONF={given}: no such file (a testbed that is down? "
                         "give --dir DIR of a running one)")
    if not given and not DEFAULT_CONF.is_file() and _sinfo(env) is None:
        raise InputError(f"no Slurm configuration found (SLURM_CONF is not set, no "
                         f"{DEFAULT_CONF}, and no controller answers): give --dir DIR of a "
                         "testbed (evalstop testbed up --dir DIR) or set SLURM_CONF")
    return env


def _run(argv: list[str], env: dict) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _sinfo(env: dict) -> str | None:
    r = _run(["sinfo", "-h", "-N", "-o", "%N|%G|%P"], env)
    return r.stdout if r is not None and r.returncode == 0 else None


def check_cluster(env: dict, tenants, max_job_gpus: int, gpus: int, *,
                  partition: str | None, resource: str) -> None:
    """The controller answers; every tenant is an account of the user; with
    ``resource="gpu"``, the partition has ``gpus`` GPUs or more, and its largest node fits
    the largest job."""
    listing = _sinfo(env)
    if listing is None:
        r = _run(["sinfo", "-h"], env)
        why = (r.stderr.strip().splitlines() or ["no answer"])[-1] if r is not None else \
            "sinfo did not run"
        raise InputError(f"the Slurm controller does not answer ({why}); is the cluster "
                         f"up? (SLURM_CONF={env.get('SLURM_CONF', 'unset')})")
    per_node = _gpus_per_node(listing, partition) if resource == "gpu" else {}
    if per_node:
        _check_gpus(per_node, max_job_gpus, gpus, partition)
    have = _accounts(env)
    missing = sorted(set(map(str, tenants)) - have) if have is not None else []
    if missing:
        raise InputError(f"the workload's tenant{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)} {'are' if len(missing) > 1 else 'is'} not a "
                         f"Slurm account you may submit to (yours: {', '.join(sorted(have))}):"
                         f" start the testbed with --tenants {','.join(missing)}, or give a "
                         "job CSV whose tenant column names your accounts")


def _check_gpus(per_node: dict[str, int], max_job_gpus: int, gpus: int,
                partition: str | None) -> None:
    total, largest = sum(per_node.values()), max(per_node.values())
    if gpus > total:
        raise InputError(f"--gpus {gpus}: the cluster has {total} GPUs"
                         f"{f' in partition {partition}' if partition else ''} (sinfo); "
                         f"replay with --gpus {total} or on a larger cluster (evalstop "
                         f"testbed up --gpus {gpus})")
    if max_job_gpus > largest:
        raise InputError(f"a job of the workload asks for {max_job_gpus} GPUs, more than a "
                         f"node of this cluster has ({largest}); Slurm would never start it")


def _accounts(env: dict) -> set[str] | None:
    """The accounts the user may submit to (Slurm's associations), or None when
    accounting does not say."""
    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None
    r = _run(["sacctmgr", "-nP", "show", "associations", f"user={user}", "format=Account"],
             env)
    if r is None or r.returncode:
        return None
    found = {line.strip() for line in r.stdout.splitlines() if line.strip()}
    return found or None


def _gpus_per_node(listing: str, partition: str | None) -> dict[str, int]:
    """GPUs per node of ``partition`` (default: the default partition, marked '*'), from
    ``sinfo -N -o %N|%G|%P``."""
    rows = [line.split("|") for line in listing.splitlines() if line.count("|") == 2]
    if partition is None:
        marked = [r for r in rows if r[2].endswith("*")]
        rows = marked or rows
    else:
        rows = [r for r in rows if r[2].rstrip("*") == partition]
    return {node: sum(int(n) for n in _GPU.findall(gres)) for node, gres, _ in rows}
