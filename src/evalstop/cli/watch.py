"""``evalstop watch``: follow many jobs' eval streams and act on each stop.

    evalstop watch --jsonl LOGDIR --db state.db \
        --action 'examples/actions/scancel.sh --tenant {tenant} -- {job} {best_step}' [--once]
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
            "acts twice on one job. A job is (source, name): the log file or TensorBoard run "
            "its records come from, and the name they give; the source's path under the "
            "watched root gives its tenant. Symbolic links under a watched directory are "
            "never followed. Bad records and files are refused (one line each) and skipped."
        ),
    )
    p.add_argument("--db", required=True, help="controller state (SQLite file; created if absent)")
    p.add_argument("--jsonl", action="append", default=[], metavar="DIR",
                   help="directory of *.jsonl eval logs, followed recursively (repeatable); "
                        "symbolic links in it are not followed; a rotated log "
                        "(a.jsonl -> a.jsonl.1) is drained first")
    p.add_argument("--tensorboard", action="append", default=[], metavar="DIR",
                   help="directory of TensorBoard runs; each run dir is a job (repeatable)")
    p.add_argument("--tenant-pattern", default=None, metavar="REGEX",
                   help="regex with a named group (?P<tenant>...) matched against each log's "
                        "path under the watched root (default: its first path component; "
                        "a log in the root itself, NAME.jsonl, is tenant NAME); "
                        "logs that do not match are refused")
    p.add_argument("--job-prefix", default=None, metavar="TEMPLATE",
                   help="require every job name to start with this, e.g. '{tenant}-'; "
                        "records with other names are refused")
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
                        "{job} {tenant} {source} {best_step} {best_checkpoint} {best_score} "
                        "{stop_step} {reason} are shell-quoted for you (do not quote them "
                        "yourself: that is refused); see examples/actions/")
    p.add_argument("--checkpoint-template", default=None,
                   help="where a job's checkpoints are, for {best_checkpoint}, e.g. "
                        "'/ckpt/{tenant}/{job}/checkpoint-{best_step}'")
    p.add_argument("--checkpoint-root", default=None, metavar="DIR",
                   help="every {best_checkpoint} must normalise to a path under DIR, else "
                        "the action is refused (default: the template's leading folder)")
    p.add_argument("--action-workers", type=int, default=8,
                   help="actions run at once, off the poll loop (default: 8)")
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
    from evalstop.integrations.watch.tenants import Tenancy

    tenancy = Tenancy(args.tenant_pattern, args.job_prefix)
    sources = [JsonlDirSource(d, tenancy=tenancy) for d in args.jsonl]
    if args.tensorboard:
        from evalstop.integrations.watch.tensorboard import TensorBoardSource

        try:
            sources += [TensorBoardSource(d, tag=args.tb_tag, loss_tag=args.tb_loss_tag,
                                          tenancy=tenancy)
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
                             checkpoint_root=args.checkpoint_root,
                             timeout=args.action_timeout)
    if not 1 <= args.action_workers <= 256:
        raise ValueError(f"--action-workers must be in 1..256, got {args.action_workers}")
    sources = _sources(args)
    try:
        store = StateStore(args.db, dry_run=args.dry_run)
    except sqlite3.Error as exc:
        raise ValueError(f"cannot open --db {args.db!r}: {exc}") from None
    stop = threading.Event()
    old = {}
    controller = None
    try:
        controller = Controller(store, sources, detector=args.detector, mode=args.mode,
                                action=action, dry_run=args.dry_run,
                                retry_running=args.retry_pending,
                                action_workers=args.action_workers)
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
        if controller is not None:
            controller.close()
        else:
            store.close()
