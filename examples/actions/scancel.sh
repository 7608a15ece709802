#!/usr/bin/env bash
# Stop a Slurm job that EvalStop stopped, and leave a note of its best checkpoint.
#
#   evalstop watch --jsonl /logs --db watch.db \
#     --checkpoint-template '/ckpt/{tenant}/{job}/checkpoint-{best_step}' \
#     --action 'examples/actions/scancel.sh --tenant {tenant} --stop-step {stop_step} -- {job} {best_step} {best_checkpoint}'
#
# The job is cancelled (plain scancel), so accounting records it as CANCELLED, not FAILED:
# Slurm sends SIGCONT and SIGTERM, and SIGKILL after the cluster's KillWait (slurm.conf):
# that is the job's grace to save. Before the cancel, the job's AdminComment names
# EvalStop, the stop step, the best step and the checkpoint (sacct -o AdminComment keeps
# it); setting AdminComment needs Slurm operator rights, so without them the note goes to
# the job's Comment (its owner may set that), and without either the job is still stopped.
# Scope: only jobs named JOB *and* charged to the Slurm account TENANT are signalled
# (squeue --name --account, then scancel by those ids): a tenant's log cannot reach
# another account's job. JOB is always a job name, never an id (an all-digit name is a
# name). Exits non-zero when nothing was stopped (no such job in that account, bad
# operands, scancel failed) so the controller records the action as failed.
# The note goes to $EVALSTOP_NOTES (default: ./evalstop-stops.tsv). DRY_RUN=1 prints
# the commands and exits 3 (nothing was stopped).
set -euo pipefail
usage() { echo "usage: $0 --tenant ACCOUNT [--stop-step N] -- JOB BEST_STEP [BEST_CHECKPOINT]" >&2; exit 2; }
tenant= stop_step=
while [[ $# -gt 0 ]]; do
  case $1 in
    --tenant) [[ $# -ge 2 ]] || usage; tenant=$2; shift 2 ;;
    --stop-step) [[ $# -ge 2 ]] || usage; stop_step=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[[ $# -ge 2 && $# -le 3 && -n $tenant ]] || usage
job=$1 best_step=$2 best_ckpt=${3:-}
# Printable, no leading '-', no whitespace in the account; a step is digits.
[[ $tenant =~ ^[A-Za-z0-9_.][A-Za-z0-9_.-]*$ ]] || { echo "bad account name" >&2; exit 2; }
[[ -n $job && $job != -* && ! $job =~ [[:cntrl:]] ]] || { echo "bad job name" >&2; exit 2; }
[[ $best_step =~ ^[0-9]*$ ]] || { echo "bad best step" >&2; exit 2; }
[[ $stop_step =~ ^[0-9]*$ ]] || { echo "bad stop step" >&2; exit 2; }
[[ ! $best_ckpt =~ [[:cntrl:]] ]] || { echo "bad checkpoint" >&2; exit 2; }

if [[ ${DRY_RUN:-0} == 1 ]]; then
  printf '%q ' squeue --noheader --format=%A --states=PENDING,RUNNING,SUSPENDED \
    "--account=$tenant" "--name=$job"; echo
  printf '%q ' scontrol update 'JobId=<id>' "AdminComment=<note>"; echo
  printf '%q ' scancel -- '<ids>'; echo
  echo "dry run: nothing stopped ($job, account $tenant)"
  exit 3
fi
ids=$(squeue --noheader --format=%A --states=PENDING,RUNNING,SUSPENDED \
  "--account=$tenant" "--name=$job")
if [[ -z ${ids//[[:space:]]/} ]]; then
  echo "no pending or running job named $(printf '%q' "$job") in account $tenant" >&2
  exit 1
fi
note="stopped by EvalStop at step ${stop_step:-?}; best step $best_step; checkpoint ${best_ckpt:-none}"
for id in $ids; do
  scontrol update "JobId=$id" "AdminComment=$note" 2>/dev/null \
    || scontrol update "JobId=$id" "Comment=$note" 2>/dev/null \
    || echo "warning: could not record the stop in job $id's comment" >&2
done
# shellcheck disable=SC2086 # ids are squeue's whitespace-separated numbers
scancel -- $ids
notes=${EVALSTOP_NOTES:-./evalstop-stops.tsv}
printf '%s\t%s\t%q\t%s\t%q\n' "$(date -u +%FT%TZ)" "$tenant" "$job" "$best_step" "$best_ckpt" >>"$notes"
echo "stopped $(printf '%q' "$job") (account $tenant, ids $(echo $ids)); best step $best_step ${best_ckpt:+at $best_ckpt}"
