"""``evalstop replay LOG.jsonl --detector SPEC``: run a detector over a finished eval log."""

from __future__ import annotations

import argparse
import json
import sys

from evalstop.detectors import DEFAULT_SPEC, make_detector
from evalstop.errors import InputError
from evalstop.evallog import read_log


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        help="run a stop rule over an eval log (JSONL) and print each job's decision",
        description=(
            "Read an eval log (JSON Lines: {\"job\", \"step\", \"eval\"} plus optional loss, "
            "proxy, progress, time), feed each job's evals in step order to a fresh detector, "
            "and print one JSON object per job in order of first appearance: job, stopped, "
            "stop_step, best_step, best_eval, reason."
        ),
    )
    p.add_argument("log", help="eval log, JSON Lines")
    p.add_argument(
        "--detector",
        default="default",
        help=f"detector spec NAME[:key=value,...] (default: 'default' = {DEFAULT_SPEC})",
    )
    p.add_argument("--mode", choices=("max", "min"), default="max",
                   help="whether a higher eval is better (max, default) or a lower one (min)")
    return p


def replay_job(records, spec: str, mode: str) -> dict:
    det = make_detector(spec, mode=mode)
    decision = None
    for rec in records:
        decision = det.update(rec.step, rec.eval, **rec.extras())
        if decision.stop:
            break
    return {
        "job": records[0].job,
        "stopped": det.stopped,
        "stop_step": det.stop_step,
        "best_step": det.best_step,
        "best_eval": det.best_score,
        "reason": decision.reason if decision is not None and decision.stop else "ran to the end",
    }


def run(args) -> int:
    make_detector(args.detector, mode=args.mode)  # fail on a bad spec before reading
    jobs = read_log(args.log)
    if not jobs:
        # Exit 0 with no output read as "no job needed stopping".
        raise InputError(f"{args.log}: no eval records in the log, nothing to replay")
    out = sys.stdout
    for records in jobs.values():
        out.write(json.dumps(replay_job(records, args.detector, args.mode)) + "\n")
    return 0
