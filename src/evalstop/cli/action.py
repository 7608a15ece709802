"""``evalstop action slurm|kubernetes|ray``: the shipped stop actions (``evalstop.actions``),
what ``evalstop watch --action`` runs on a stop."""

from __future__ import annotations

import argparse
import importlib

KINDS = (("slurm", "slurm"), ("kubernetes", "kubernetes"), ("ray", "ray_jobs"))


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "action", help="stop one job by its scheduler id (Slurm, Kubernetes, Ray Jobs)",
        description=(
            "Stop one job that evalstop watch stopped, by the scheduler's id of the job "
            "(--job-id {job_id}), after asking the scheduler that the id is --tenant's, "
            "exactly, and still running. Exit 0 stopped, 1 refused or failed, 2 bad "
            "operands or no id, 3 dry run, 10 already ended (nothing to do)."))
    kinds = p.add_subparsers(dest="action_kind", metavar="{slurm,kubernetes,ray}",
                             required=True)
    for name, module in KINDS:
        mod = importlib.import_module(f"evalstop.actions.{module}")
        mod.add_parser(kinds).set_defaults(_act=mod.run)
    return p


def run(args) -> int:
    return args._act(args)
