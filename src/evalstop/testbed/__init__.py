"""A local Slurm cluster on loopback (munge, MariaDB, slurmdbd, slurmctld, slurmd in one
folder, fake GPUs as file-backed GRES), a replay of a workload onto any Slurm cluster, and
the measurement of a replay from Slurm's own accounting (``sacct``).

Modules: ``procs`` (daemons started and stopped by pid), ``config`` (the configuration
files), ``cluster`` (the cluster, up and down), ``submit`` (sbatch of one job), ``replay``
(a workload submitted at its arrival times), ``worker`` (the job that writes an eval log),
``sacct`` (accounting records read back), ``measure`` (a replay's metrics from them),
``compare`` (the same job list in the simulator, job by job).
"""
