"""One job handed to Slurm: ``sbatch`` under its tenant's account, named for the job, with
its GPUs as ``--gres=gpu:N`` (or, on a partition without GPUs, as CPUs), running a worker.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

WORKER = Path(__file__).with_name("worker.py")


@dataclass(frozen=True)
class SubmitOptions:
    partition: str | None = None
    resource: str = "gpu"  # "gpu": --gres=gpu:N; "cpu": --cpus-per-task=N (no GPU used)
    extra: tuple[str, ...] = ()  # more sbatch arguments, as given


def worker_command(spec: Path, log: Path, ckpt: Path | None) -> str:
    argv = [sys.executable, "-I", str(WORKER), str(spec), str(log)]
    if ckpt is not None:
        argv.append(str(ckpt))
    return "exec " + shlex.join(argv)


def sbatch_argv(job: str, tenant: str, gpus: int, command: str, out_dir: Path,
                opts: SubmitOptions) -> list[str]:
    argv = ["sbatch", "--parsable", f"--account={tenant}", f"--job-name={job}",
            "--ntasks=1", f"--output={out_dir}/{job}.%j.out", f"--chdir={out_dir}"]
    if opts.resource == "gpu":
        argv += [f"--gres=gpu:{gpus}", "--cpus-per-task=1"]
    elif opts.resource == "cpu":
        argv += [f"--cpus-per-task={gpus}"]
    else:
        raise ValueError(f"resource must be gpu or cpu, got {opts.resource!r}")
    if opts.partition:
        argv.append(f"--partition={opts.partition}")
    argv += list(opts.extra)
    return argv + ["--wrap", command]


def sbatch(argv: list[str], env: dict) -> int:
    """Submit; the Slurm job id. Slurm's refusal (an unknown account, say) is a
    ``RuntimeError`` with sbatch's own message."""
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    if r.returncode:
        raise RuntimeError(f"sbatch refused job {argv[3].split('=', 1)[1]!r}: "
                           f"{r.stderr.strip() or r.stdout.strip()}")
    return int(r.stdout.strip().split(";")[0])
