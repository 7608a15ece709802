#!/usr/bin/env bash
# Stop a Slurm job that EvalStop stopped, and leave a note of its best checkpoint.
#
#   evalstop watch --jsonl /logs --db watch.db \
#     --checkpoint-template '/ckpt/{job}/checkpoint-{best_step}' \
#     --action 'examples/actions/scancel.sh {job} {best_step} {best_checkpoint}'
#
# JOB is the Slurm job name (scancel --name); a numeric JOB is taken as the job id.
# The note goes to $EVALSTOP_NOTES (default: ./evalstop-stops.tsv) so the platform can
# promote the best checkpoint. DRY_RUN=1 prints the commands instead of running them.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 JOB BEST_STEP [BEST_CHECKPOINT]" >&2
  exit 2
fi
job=$1 best_step=$2 best_ckpt=${3:-}
run() { if [[ ${DRY_RUN:-0} == 1 ]]; then printf '%q ' "$@"; echo; else "$@"; fi; }

if [[ $job =~ ^[0-9]+(_[0-9]+)?$ ]]; then
  run scancel --signal=TERM --full "$job"
else
  run scancel --signal=TERM --full --name="$job"
fi
notes=${EVALSTOP_NOTES:-./evalstop-stops.tsv}
if [[ ${DRY_RUN:-0} != 1 ]]; then
  printf '%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$job" "$best_step" "$best_ckpt" >>"$notes"
fi
echo "stopped $job; best step $best_step ${best_ckpt:+at $best_ckpt}"
