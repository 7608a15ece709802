"""``evalstop reproduce --logs DIR [--sacct FILE]``: what each stop rule would have saved
and cost on a platform's own finished runs, and the workload refitted on them.

Reads the runs (``evalstop.workload.own_logs``), checks the Slurm export first when one is
given, replays ``none``, ``default`` and ``evalstop:k=2`` (``evalstop.experiments.own_runs``),
refits the workload (``evalstop.workload.fit``; too few runs of a class is said, not an
error: the rules' figures stand without it), prints one line per rule and writes
``own_runs.json``, ``own_runs.md`` and ``own_fit.json`` into a fresh ``--out`` (replaced
whole, as the studies' report is).
"""

from __future__ import annotations

from pathlib import Path

from evalstop.cli.reproduce import OWNED
from evalstop.experiments import own_runs
from evalstop.fileio import write_text
from evalstop.report.files import write_json
from evalstop.staging import check_replaceable, staged_folder
from evalstop.workload import fit as fitmod
from evalstop.workload.own_logs import read_own_runs


def run_logs(args) -> int:
    from evalstop.cli.reproduce import _command

    progress = not args.no_progress
    out = check_replaceable(args.out, lambda name: OWNED.fullmatch(name) is not None)
    if args.sacct is not None:
        from evalstop.workload.sacct import read_sacct_rows

        read_sacct_rows(args.sacct)  # a bad export fails before the logs are read
    own = read_own_runs(args.logs, metric=args.metric, progress=progress)
    sizes, sized = own_runs.sizes(own, args.sacct)
    rows = own_runs.replay_rules(own, sizes, progress=progress)
    runs, _ = fitmod.log_runs(args.logs, eval_set=args.eval_set, own=own)
    logs_name = Path(args.logs).name or str(args.logs)
    try:
        fit = fitmod.fit(runs, command=_command(args),
                         sources=f"eval logs under {logs_name} ({args.eval_set} evals)")
    except ValueError as exc:
        fit = None
        fit_note = {"error": str(exc)}
    result = {
        "command": _command(args), "logs": logs_name, "label_rule": own_runs.LABEL_NOTE,
        "runs": {"read": len(own.curves), "hacking": sum(lab.hacking for lab in own.labels.values()),
                 "by_format": own.counts()},
        "rules": rows, "sizes": sized, "skipped": own.skipped,
        "fit": (fit_note if fit is None else
                {"split_rule": fit["split_rule"], "table": fit["table"], "file": "own_fit.json"}),
    }
    with staged_folder(out, "evalstop reproduce") as stage:
        write_json(stage / "own_runs.json", result)
        write_text(stage / "own_runs.md", own_runs.markdown(result))
        if fit is not None:
            write_json(stage / "own_fit.json", fit)
    print(f"{len(own.curves)} runs read from {logs_name} ("
          + ", ".join(f"{v} {k}" for k, v in own.counts().items() if v)
          + f"), {result['runs']['hacking']} labelled hacking, {len(own.skipped)} skipped. "
          + own_runs.LABEL_NOTE)
    for line in own_runs.lines(rows):
        print("  " + line)
    if fit is None:
        print(f"workload not refitted: {fit_note['error']}")
    print(f"report: {out / 'own_runs.md'} (own_runs.json"
          + (", own_fit.json" if fit is not None else "") + " beside it)")
    return 0
