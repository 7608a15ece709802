"""``evalstop watch``: follow many jobs' eval streams and act on each stop.

    evalstop watch --jsonl LOGDIR --db state.db \
        --action 'evalstop action slurm --tenant {tenant} --job-id {job_id}' [--once]
    evalstop watch --tensorboard RUNS --tb-tag eval/reward --db state.db --dry-run
    evalstop watch --status --db state.db [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from evalstop.detectors import DEFAULT_SPEC
from evalstop.integrations.watch.budget import (
    DEFAULT_BYTES,
    DEFAULT_ENTRIES,
    DEFAULT_EVENTS,
    DEFAULT_FILES,
    DEFAULT_LINES,
)
from evalstop.integrations.watch.controller import DEFAULT_MAX_JOBS
from evalstop.integrations.watch.http_guard import MAX_CONNECTIONS, ServeLimits
from evalstop.integrations.watch.page import MAX_PAGE_SIZE, PAGE_SIZE
from evalstop.integrations.watch.quota import DEFAULT_TENANT_BYTES
from evalstop.integrations.watch.shadow import DEFAULT_END_AFTER
from evalstop.integrations.watch.store import KEEP_EVALS


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
    p.add_argument("--db", default=None,
                   help="controller state (SQLite file; created if absent); required but "
                        "with --check-policy")
    p.add_argument("--policy", default=None, metavar="FILE",
                   help="TOML policy: per-tenant metric, mode, detector, noise (eval_n/sigma) "
                        "and eval group, action, checkpoint root, dry-run and allow list (see "
                        "docs/watch.md); replaces --detector/--mode/--action/--checkpoint-*/"
                        "--tenant-pattern/--tb-tag")
    p.add_argument("--check-policy", action="store_true",
                   help="with --policy: check it, print each tenant's effective rule, exit")
    p.add_argument("--serve", default=None, metavar="[HOST:]PORT",
                   help="serve /metrics (Prometheus), /healthz and a read-only status page "
                        "at http://HOST:PORT/ (HOST is 127.0.0.1 unless given; needs "
                        "evalstop[watch]); any other host needs --serve-token-file")
    p.add_argument("--serve-token-file", default=None, metavar="FILE",
                   help="a file holding a secret token: every path but /healthz then "
                        "needs 'Authorization: Bearer TOKEN'")
    p.add_argument("--serve-connections", type=int, default=MAX_CONNECTIONS,
                   metavar="N",
                   help="most connections open at once; at the cap the oldest one that has "
                        f"sent no request is closed (default: {MAX_CONNECTIONS})")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE, metavar="N",
                   help=f"jobs per status page, 1..{MAX_PAGE_SIZE} (default: {PAGE_SIZE})")
    p.add_argument("--jsonl", action="append", default=[], metavar="DIR",
                   help="directory of *.jsonl eval logs, followed recursively (repeatable); "
                        "symbolic links in it are not followed; a rotated log "
                        "(a.jsonl -> a.jsonl.1) is drained first")
    p.add_argument("--tensorboard", action="append", default=[], metavar="DIR",
                   help="directory of TensorBoard runs; each run dir is a job (repeatable)")
    p.add_argument("--rotated-gz", action="store_true",
                   help="rotated logs may be gzip-compressed (logrotate's compress): the rest "
                        "of a log is drained from NAME.jsonl.N.gz (the rotated-name pattern "
                        "{name}.{n}.gz; a policy's `rotated` key names others per tenant)")
    p.add_argument("--budget-lines", type=int, default=DEFAULT_LINES, metavar="N",
                   help="lines read per tenant per poll, refused ones included; the rest "
                        "is read by the next polls, which then come without waiting for "
                        f"--interval (default: {DEFAULT_LINES})")
    p.add_argument("--budget-bytes", type=int, default=DEFAULT_BYTES, metavar="N",
                   help=f"bytes read per tenant per poll (default: {DEFAULT_BYTES}, 2 MiB)")
    p.add_argument("--budget-files", type=int, default=DEFAULT_FILES, metavar="N",
                   help=f"files opened per tenant per poll (default: {DEFAULT_FILES})")
    p.add_argument("--budget-events", type=int, default=DEFAULT_EVENTS, metavar="N",
                   help="TensorBoard events read per tenant per poll "
                        f"(default: {DEFAULT_EVENTS})")
    p.add_argument("--budget-entries", type=int, default=DEFAULT_ENTRIES, metavar="N",
                   help="folder entries looked at per tenant per poll; a tenant with more "
                        "is listed a window a poll, resuming where the last one stopped "
                        f"(default: {DEFAULT_ENTRIES})")
    p.add_argument("--max-jobs", type=int, default=DEFAULT_MAX_JOBS, metavar="N",
                   help="jobs kept per tenant; records of further new jobs are refused "
                        f"(default: {DEFAULT_MAX_JOBS})")
    p.add_argument("--tenant-bytes", type=int, default=DEFAULT_TENANT_BYTES, metavar="N",
                   help="state-file bytes per tenant: each job reserves the most it can "
                        "take (--keep-evals evals of its key), and a new job that does not "
                        f"fit is refused (default: {DEFAULT_TENANT_BYTES}, 1 GiB)")
    p.add_argument("--keep-evals", type=int, default=KEEP_EVALS, metavar="N",
                   help=f"evals kept per job in the state file, the newest (default: "
                        f"{KEEP_EVALS})")
    p.add_argument("--mlflow", action="append", default=[], metavar="URI",
                   help="MLflow tracking URI to follow (http://HOST:PORT, "
                        "sqlite:////path/mlruns.db, file:///path/mlruns; repeatable): each "
                        "run is a job (its run id), of the tenant that --policy gives its "
                        "experiment by id or MLflow permission; decisions are written back "
                        "to the run as evalstop.* tags (needs evalstop[mlflow])")
    p.add_argument("--mlflow-metric", default=None, metavar="NAME",
                   help="MLflow metric key that holds the eval score; --mlflow needs "
                        "--policy, whose per-tenant 'metric' replaces this flag")
    p.add_argument("--tenant-pattern", default=None, metavar="REGEX",
                   help="regex with a named group (?P<tenant>...) matched against each log's "
                        "path under the watched root (default: its first path component; "
                        "a log in the root itself, NAME.jsonl, is tenant NAME); "
                        "logs that do not match are refused")
    p.add_argument("--job-prefix", default=None, metavar="TEMPLATE",
                   help="require every job name to start with this, e.g. '{tenant}-'; "
                        "records with other names are refused; the character after "
                        "{tenant} is a separator that no tenant name may hold (a tenant "
                        "whose name holds it is refused)")
    p.add_argument("--tb-tag", default=None,
                   help="TensorBoard scalar tag that holds the eval score (default: eval)")
    p.add_argument("--tb-loss-tag", default=None,
                   help="TensorBoard scalar tag of the training loss, for rules that read it")
    p.add_argument("--detector", default=None,
                   help=f"detector spec NAME[:key=value,...] (default: 'default' = {DEFAULT_SPEC})")
    p.add_argument("--mode", choices=("max", "min"), default=None,
                   help="whether a higher eval is better (max, default) or a lower one (min)")
    p.add_argument("--action", default=None,
                   help="shell command template run once per stopped job; placeholders "
                        "{job} {job_id} {tenant} {source} {best_step} {best_checkpoint} "
                        "{best_score} {stop_step} {reason} are shell-quoted for you (do not "
                        "quote them yourself, nor give them to sh -c or eval: that is "
                        "refused); the shipped actions: evalstop action slurm|kubernetes|ray "
                        "--tenant {tenant} --job-id {job_id}")
    p.add_argument("--action-idempotent", action="store_true",
                   help="the --action command is safe to run twice for one stop: one left "
                        "running by a killed controller is run again on restart (the "
                        "shipped evalstop action commands are, without this flag)")
    p.add_argument("--checkpoint-template", default=None,
                   help="where a job's checkpoints are, for {best_checkpoint}, e.g. "
                        "'/ckpt/{tenant}/{job}/checkpoint-{best_step}'")
    p.add_argument("--checkpoint-root", default=None, metavar="DIR",
                   help="every {best_checkpoint} must normalise to a path under DIR, else "
                        "the action is refused; DIR may hold {tenant} (default: the "
                        "template's leading folder); a template whose leading folders name "
                        "{tenant} also confines each tenant to its own folder")
    p.add_argument("--action-workers", type=int, default=8,
                   help="actions run at once, off the poll loop (default: 8)")
    p.add_argument("--action-timeout", type=float, default=120.0,
                   help="seconds before an action command is killed (default: 120)")
    p.add_argument("--dry-run", action="store_true",
                   help="decide and print the commands that would run; change no state")
    p.add_argument("--retry-pending", action="store_true",
                   help="re-run actions that were started but not confirmed when the "
                        "controller last stopped, and those marked unknown (default: only "
                        "those safe to run twice; the rest are marked unknown)")
    p.add_argument("--once", action="store_true",
                   help="process what is there and exit (tests, cron)")
    p.add_argument("--interval", type=float, default=10.0,
                   help="seconds between polls when not --once (default: 10)")
    p.add_argument("--status", action="store_true",
                   help="print each job's last score, streak, best step and stop, then exit")
    p.add_argument("--json", action="store_true",
                   help="with --status: JSON Lines output, one line per job")
    p.add_argument("--fleet", action="store_true",
                   help="with --status: each eval group's pooled noise instead of the jobs "
                        "(with --json, one line per group)")
    p.add_argument("--score", action="store_true",
                   help="with --status: the shadow score, per tenant and rule, instead of "
                        "the jobs (with --json, one line per tenant and rule)")
    p.add_argument("--shadow", action="append", default=None, metavar="SPEC",
                   help="a candidate rule followed in shadow on every job (repeatable): "
                        "its would-be stops are followed to the job's end and scored (see "
                        "docs/watch.md, shadow mode); a policy names them with `shadow`")
    p.add_argument("--shadow-end-after", type=float, default=DEFAULT_END_AFTER,
                   metavar="SECONDS",
                   help="a job followed in shadow has ended after this long without a "
                        "record (or at a record with \"end\": true) (default: "
                        f"{DEFAULT_END_AFTER:g})")
    p.add_argument("--report", default=None, metavar="DIR",
                   help="with --db: write the shadow retrospective (report.html, report.md, "
                        "plots) to DIR, then exit")
    p.add_argument("--export-corpus", default=None, metavar="FILE",
                   help="with --db: write the jobs followed in shadow to their end as an "
                        "eval log (JSONL, plus tenant) to FILE, a new file, then exit")
    return p


def _status(args) -> int:
    import sqlite3

    from evalstop.integrations.watch.shadow_status import format_shadow, shadow_rows
    from evalstop.integrations.watch.status import (
        fleet_rows,
        format_actions,
        format_fleet,
        format_table,
        status_rows,
    )
    from evalstop.integrations.watch.store import StateStore

    try:
        store = StateStore(args.db, readonly=True)
        try:
            rows = status_rows(store)
            fleet = fleet_rows(store)
            shadow = shadow_rows(store)
        finally:
            store.close()
    except sqlite3.Error as exc:  # e.g. an unreadable file: one line, like the run path
        raise ValueError(f"cannot read --db {args.db!r}: {exc}") from None
    # One kind of line per output, so a reader of --json lines needs no type test.
    if args.fleet or args.score:
        both = (fleet, format_fleet) if args.fleet else (shadow, format_shadow)
        sys.stdout.write("".join(json.dumps(f) + "\n" for f in both[0]) if args.json
                         else both[1](both[0]))
    elif args.json:
        for r in rows:
            sys.stdout.write(json.dumps(r) + "\n")
    else:
        sys.stdout.write(format_table(rows))
        sys.stdout.write(format_actions(rows))
        sys.stdout.write(format_fleet(fleet))
        sys.stdout.write(format_shadow(shadow))
    return 0


def _shadow_output(args) -> int:
    """``--report DIR`` / ``--export-corpus FILE``: read the state, write, exit."""
    import sqlite3

    from evalstop.integrations.watch.store import StateStore

    if args.db is None:
        raise ValueError("--report and --export-corpus need --db FILE")
    try:
        store = StateStore(args.db, readonly=True)
        try:
            if args.export_corpus is not None:
                from evalstop.integrations.watch.shadow_export import export_corpus

                jobs, records = export_corpus(store, args.export_corpus)
                sys.stderr.write(f"evalstop watch: wrote {records} evals of {jobs} runs to "
                                 f"{args.export_corpus}\n")
            if args.report is not None:
                from evalstop.integrations.watch.shadow_report import write_report

                path = write_report(store, args.report)
                sys.stderr.write(f"evalstop watch: wrote {path}\n")
        finally:
            store.close()
    except sqlite3.Error as exc:
        raise ValueError(f"cannot read --db {args.db!r}: {exc}") from None
    return 0


def _budget(args):
    from evalstop.integrations.watch.budget import Budget

    for flag in ("budget_lines", "budget_bytes", "budget_files", "budget_events",
                 "budget_entries",
                 "max_jobs", "keep_evals", "tenant_bytes"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be >= 1, "
                             f"got {getattr(args, flag)}")
    return Budget(lines=args.budget_lines, bytes=args.budget_bytes, files=args.budget_files,
                  events=args.budget_events, entries=args.budget_entries)


def _sources(args, policy=None) -> list:
    from evalstop.integrations.watch.jsonl import JsonlDirSource
    from evalstop.integrations.watch.policy import PolicyTenancy
    from evalstop.integrations.watch.tenants import Tenancy

    tenancy = (Tenancy(args.tenant_pattern, args.job_prefix) if policy is None
               else PolicyTenancy(policy, args.job_prefix))
    budget = _budget(args)
    sources = [JsonlDirSource(d, tenancy=tenancy, budget=budget, compressed=args.rotated_gz)
               for d in args.jsonl]
    if args.tensorboard:
        from evalstop.integrations.watch.tensorboard import TensorBoardSource

        try:
            sources += [TensorBoardSource(d, tag=args.tb_tag or "eval",
                                          loss_tag=args.tb_loss_tag,
                                          tenancy=tenancy, budget=budget)
                        for d in args.tensorboard]
        except ImportError as exc:  # the extra is missing: one line, not a traceback
            raise ValueError(str(exc).split(" (")[0]) from None
    if args.mlflow:
        from evalstop.integrations.watch.isolated import DEFAULT_WAIT
        from evalstop.integrations.watch.mlflow_source import MlflowSource, check_uri

        for uri in args.mlflow:
            check_uri(uri)  # before the slow import: a typo costs no wait
        if len(args.mlflow) > 1 and policy is not None and any(
                r.mlflow_experiments for r in policy.rules):
            raise ValueError("mlflow_experiments names ids of one server: follow one --mlflow "
                             "URI per controller with it")
        # A request the server never answers is given up on soon (MLflow's own default
        # retries for minutes); the source's thread holds up nothing else meanwhile.
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
        try:
            sources += [MlflowSource(uri, metric=args.mlflow_metric or "eval",
                                     tenancy=tenancy, wait=None if args.once else DEFAULT_WAIT,
                                     stuck_after=max(3 * args.interval, 5.0))
                        for uri in args.mlflow]
        except ImportError as exc:
            raise ValueError(str(exc).split(" (")[0]) from None
    return sources


_POLICY_REPLACES = ("detector", "mode", "action", "checkpoint_template", "checkpoint_root",
                    "tenant_pattern", "tb_tag", "mlflow_metric", "shadow")


def _policy(args):
    """The policy file's rules, or None for the flags' single rule; option clashes are
    errors (a policy and a flag saying different things would be a guess)."""
    if args.policy is None:
        if args.check_policy:
            raise ValueError("--check-policy needs --policy FILE")
        return None
    from evalstop.integrations.watch.policy import load_policy

    given = [f"--{k.replace('_', '-')}" for k in _POLICY_REPLACES
             if getattr(args, k) is not None]
    if given:
        raise ValueError(f"--policy replaces {', '.join(given)}: set them in the policy file")
    return load_policy(args.policy)


LOOPBACK = ("127.0.0.1", "::1", "localhost")
MAX_TOKEN_BYTES = 4096


def _parse_serve(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--serve must be [HOST:]PORT (e.g. 127.0.0.1:9100), got {value!r}")
    return host, int(port)


def _serve_token(args, host: str) -> str | None:
    """The bearer token, read from --serve-token-file; required off loopback."""
    if args.serve_token_file is None:
        if host not in LOOPBACK:
            raise ValueError(f"--serve {args.serve}: serving beyond loopback needs "
                             "--serve-token-file FILE (or a proxy with authentication "
                             "in front, on loopback)")
        return None
    from evalstop.fileio import read_regular

    raw = read_regular(args.serve_token_file, "--serve-token-file", MAX_TOKEN_BYTES)
    token = raw.decode("utf-8", "replace").strip()
    if len(token) < 16 or not token.isprintable() or " " in token:
        raise ValueError("--serve-token-file must hold one token of at least 16 printable "
                         "characters, without spaces")
    return token


def _check_serve(args) -> tuple[str, int, str | None, ServeLimits]:
    host, port = _parse_serve(args.serve)
    if not 1 <= args.page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"--page-size must be in 1..{MAX_PAGE_SIZE}, got {args.page_size}")
    if not 1 <= args.serve_connections <= 4096:
        raise ValueError(f"--serve-connections must be in 1..4096, got "
                         f"{args.serve_connections}")
    token = _serve_token(args, host)
    return host, port, token, ServeLimits(max_connections=args.serve_connections)


def _serve(args, controller_interval: float, tenant_rules=None, sources=()):
    """Start the metrics/health/page server; returns (server, metrics, health)."""
    from evalstop.integrations.watch.observe import Health, StatusServer, WatchMetrics
    from evalstop.integrations.watch.status import page_html

    host, port, token, limits = _check_serve(args)
    try:
        metrics = WatchMetrics()
    except ImportError as exc:
        raise ValueError(str(exc).split(" (")[0]) from None
    health = Health(controller_interval, sources=sources)
    db, per_page = args.db, args.page_size

    def page(number: int) -> str:
        ok, msg = health.check()
        return page_html(db, health=("Healthy." if ok else f"Unhealthy: {msg}."),
                         page=number, per_page=per_page, tenant_rules=tenant_rules)

    server = StatusServer(host, port, metrics=metrics, health=health, page=page, token=token,
                          limits=limits).start()
    h, p = server.address
    sys.stderr.write(f"evalstop watch: serving http://{h}:{p}/ (/metrics, /healthz)\n")
    return server, metrics, health


def _say_wait(message: str) -> None:
    """One line when the state database is locked by another process (then waited for)."""
    sys.stderr.write(f"evalstop watch: {message}\n")
    sys.stderr.flush()


def run(args) -> int:
    if args.status:
        if args.db is None:
            raise ValueError("--status needs --db FILE")
        return _status(args)
    if args.report is not None or args.export_corpus is not None:
        return _shadow_output(args)
    if args.fleet or args.score:
        raise ValueError(f"--{'fleet' if args.fleet else 'score'} goes with --status")
    import sqlite3

    from evalstop.detectors import make_detector
    from evalstop.integrations.watch.actions import ShellAction, check_seconds
    from evalstop.integrations.watch.controller import Controller
    from evalstop.integrations.watch.shadow import check_end_after
    from evalstop.integrations.watch.store import StateStore

    # Check every option before touching the state or any log.
    policy = _policy(args)
    if args.check_policy:
        sys.stdout.write(policy.describe())
        return 0
    if args.db is None:
        raise ValueError("--db FILE is required (the controller's state)")
    if policy is None:
        for spec in [args.detector or "default", *(args.shadow or ())]:
            make_detector(spec, mode=args.mode or "max")
    if not args.once:
        check_seconds("--interval", args.interval)
    check_end_after(args.shadow_end_after)
    check_seconds("--action-timeout", args.action_timeout)
    if args.serve is not None:
        _check_serve(args)
    if not args.jsonl and not args.tensorboard and not args.mlflow:
        raise ValueError("give at least one --jsonl DIR, --tensorboard DIR or --mlflow URI")
    action = None
    if args.action is None and policy is None and (args.checkpoint_template or
                                                   args.checkpoint_root):
        # Only an action reads them ({best_checkpoint}): alone they would do nothing.
        raise ValueError("--checkpoint-template and --checkpoint-root name the checkpoint an "
                         "--action is given ({best_checkpoint}); give --action too")
    if args.action is not None:
        action = ShellAction(args.action, checkpoint_template=args.checkpoint_template,
                             checkpoint_root=args.checkpoint_root,
                             timeout=args.action_timeout, idempotent=args.action_idempotent)
    elif args.action_idempotent:
        raise ValueError("--action-idempotent needs --action")
    if not 1 <= args.action_workers <= 256:
        raise ValueError(f"--action-workers must be in 1..256, got {args.action_workers}")
    sources = _sources(args, policy)
    # The server first: a refused --serve (port taken, extra missing) ends the run before
    # the state database is created.
    server = metrics = health = None
    if args.serve is not None:
        shown = policy.rules if policy is not None else ()
        server, metrics, health = _serve(args, args.interval, {
            r.tenant: (r.detector_spec(), r.dry_run or args.dry_run) for r in shown},
            sources)
    try:
        store = StateStore(args.db, dry_run=args.dry_run, on_wait=_say_wait,
                           keep_evals=args.keep_evals)
    except sqlite3.Error as exc:
        if server is not None:
            server.close()
        raise ValueError(f"cannot open --db {args.db!r}: {exc}") from None
    controller = None
    try:
        rules = ({"policy": policy} if policy is not None else
                 {"detector": args.detector or "default", "mode": args.mode or "max",
                  "action": action, "shadow": args.shadow or ()})
        controller = Controller(store, sources, **rules, dry_run=args.dry_run,
                                action_timeout=args.action_timeout,
                                retry_running=args.retry_pending,
                                action_workers=args.action_workers,
                                max_jobs=args.max_jobs, tenant_bytes=args.tenant_bytes,
                                metrics=metrics, health=health,
                                shadow_end_after=args.shadow_end_after)
        page = None
        if server is not None:
            h, p = server.address
            page = f"http://{h}:{p}/"
        from evalstop.integrations.watch.startup import startup_line

        sys.stderr.write(startup_line(sources, controller.policy, action=action, page=page,
                                      dry_run=args.dry_run, db=args.db) + "\n")
        sys.stderr.flush()
        if args.once:
            controller.run_until_idle()
            return 0
        # Finish the poll in progress, commit, and exit on SIGINT/SIGTERM.
        from evalstop.stop_signal import StopSignal

        with StopSignal() as stop:
            controller.run_forever(args.interval, stop.wait)
        sys.stderr.write("evalstop watch: stopped\n")
        return 0
    except sqlite3.Error as exc:
        raise ValueError(f"state database {args.db!r}: {exc}") from None
    finally:
        if server is not None:
            server.close()
        if controller is not None:
            controller.close()
        else:
            store.close()
