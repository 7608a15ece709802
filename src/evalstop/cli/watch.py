"""``evalstop watch``: follow many jobs' eval streams and act on each stop.

    evalstop watch --jsonl LOGDIR --db state.db --action 'scancel --name={job}' [--once]
    evalstop watch --tensorboard RUNS --tb-tag eval/reward --db state.db --dry-run
    evalstop watch --status --db state.db [--json]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from evalstop.detectors import DEFAULT_SPEC


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "watch",
        help="follow jobs' eval logs (JSONL, TensorBoard), stop declining jobs by a command",
        description=(
            "Follow the eval streams of many jobs at once (a directory of growing JSONL eval "
            "logs; TensorBoard run directories), run the detector per job, and on a stop run "
            "an action command. State (detector state, read offsets, decisions, actions) is "
            "kept in a SQLite file, so a killed controller resumes where it stopped and never "
            "acts twice on one job."
        ),
    )
    p.add_argument("--db", required=True, help="controller state (SQLite file; created if absent)")
    p.add_argument("--jsonl", action="append", default=[], metavar="DIR",
                   help="directory of *.jsonl eval logs, followed recursively (repeatable)")
    p.add_argument("--tensorboard", action="append", default=[], metavar="DIR",
                   help="directory of TensorBoard runs; each run dir is a job (repeatable)")
    p.add_argument("--tb-tag", default="eval",
                   help="TensorBoard scalar tag that holds the eval score (default: eval)")
    p.add_argument("--tb-loss-tag", default=None,
                   help="TensorBoard scalar tag of the training loss, for rules that read it")
    p.add_argument("--detector", default="default",
                   help=f"detector spec NAME[:key=value,...] (default: 'default' = {DEFAULT_SPEC})")
    p.add_argument("--mode", choices=("max", "min"), default="max",
                   help="whether a higher eval is better (max, default) or a lower one (min)")
    p.add_argument("--action", default=None,
                   help="shell command template run once per stopped job; placeholders "
                        "{job} {best_step} {best_checkpoint} {best_score} {stop_step} {reason} "
                        "are shell-quoted (see examples/actions/)")
    p.add_argument("--checkpoint-template", default=None,
                   help="where a job's checkpoints are, for {best_checkpoint}, e.g. "
                        "'/ckpt/{job}/checkpoint-{best_step}'")
    p.add_argument("--action-timeout", type=float, default=120.0,
                   help="seconds before an action command is killed (default: 120)")
    p.add_argument("--dry-run", action="store_true",
                   help="decide and print the commands that would run; change no state")
    p.add_argument("--retry-pending", action="store_true",
                   help="re-run actions that were started but not confirmed when the "
                        "controller last stopped (default: report them only)")
    p.add_argument("--once", action="store_true",
                   help="process what is there and exit (tests, cron)")
    p.add_argument("--interval", type=float, default=10.0,
                   help="seconds between polls when not --once (default: 10)")
    p.add_argument("--status", action="store_true",
                   help="print each job's last score, streak, best step and stop, then exit")
    p.add_argument("--json", action="store_true", help="with --status: JSON Lines output")
    return p


def _status(args) -> int:
    import sqlite3

    from evalstop.integrations.watch.status import format_table, status_rows
    from evalstop.integrations.watch.store import StateStore

    try:
        store = StateStore(args.db, readonly=True)
        try:
            rows = status_rows(store)
        finally:
            store.close()
    except sqlite3.Error as exc:  # e.g. an unreadable file: one line, like the run path
        raise ValueError(f"cannot read --db {args.db!r}: {exc}") from None
    if args.json:
        for r in rows:
            sys.stdout.write(json.dumps(r) + "\n")
    else:
        sys.stdout.write(format_table(rows))
    return 0


def _sources(args) -> list:
    from evalstop.integrations.watch.jsonl import JsonlDirSource

    sources = [JsonlDirSource(d) for d in args.jsonl]
    if args.tensorboard:
        from evalstop.integrations.watch.tensorboard import TensorBoardSource

        try:
            sources += [TensorBoardSource(d, tag=args.tb_tag, loss_tag=args.tb_loss_tag)
                        for d in args.tensorboard]
        except ImportError as exc:  # the extra is missing: one line, not a traceback
            raise ValueError(str(exc).split(" (")[0]) from None
    return sources


def run(args) -> int:
    if args.status:
        return _status(args)
    import sqlite3

    from evalstop.detectors import make_detector
    from evalstop.integrations.watch.actions import ShellAction, check_seconds
    from evalstop.integrations.watch.controller import Controller
    from evalstop.integrations.watch.store import StateStore

    # Check every option before touching the state or any log.
    make_detector(args.detector, mode=args.mode)
    if not args.once:
        check_seconds("--interval", args.interval)
    if not args.jsonl and not args.tensorboard:
        raise ValueError("give at least one --jsonl DIR or --tensorboard DIR")
    action = None
    if args.action is not None:
        action = ShellAction(args.action, checkpoint_template=args.checkpoint_template,
                             timeout=args.action_timeout)
    sources = _sources(args)
    try:
        store = StateStore(args.db, dry_run=args.dry_run)
    except sqlite3.Error as exc:
        raise ValueError(f"cannot open --db {args.db!r}: {exc}") from None
    stop = threading.Event()
    old = {}
    try:
        controller = Controller(store, sources, detector=args.detector, mode=args.mode,
                                action=action, dry_run=args.dry_run,
                                retry_running=args.retry_pending)
        if args.once:
            controller.run_until_idle()
            return 0
        # Finish the poll in progress, commit, and exit on SIGINT/SIGTERM.
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, lambda signum, frame: stop.set())
        controller.run_forever(args.interval, stop.wait)
        sys.stderr.write("evalstop watch: stopped\n")
        return 0
    except sqlite3.Error as exc:
        raise ValueError(f"state database {args.db!r}: {exc}") from None
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        store.close()
