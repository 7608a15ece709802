#!/usr/bin/env bash
# Suspend a Kubernetes Job that EvalStop stopped (its pods are deleted, its GPUs freed),
# or, for a Job admitted by Kueue, deactivate its Kueue Workload (Kueue owns the Job's
# suspend field, so the Workload's spec.active is the switch that sticks). The best
# checkpoint is recorded as an annotation on the Job.
#
#   evalstop watch --jsonl /logs --db watch.db \
#     --checkpoint-template 's3://ckpt/{job}/checkpoint-{best_step}' \
#     --action 'examples/actions/kubectl-suspend.sh {job} {best_step} {best_checkpoint}'
#
# Environment: NAMESPACE (default: kubectl's current), KUEUE=1 to deactivate the Kueue
# Workload instead of suspending the Job, DRY_RUN=1 to print the commands only.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 JOB BEST_STEP [BEST_CHECKPOINT]" >&2
  exit 2
fi
job=$1 best_step=$2 best_ckpt=${3:-}
ns=()
[[ -n ${NAMESPACE:-} ]] && ns=(--namespace "$NAMESPACE")
run() { if [[ ${DRY_RUN:-0} == 1 ]]; then printf '%q ' "$@"; echo; else "$@"; fi; }

run kubectl "${ns[@]}" annotate --overwrite job "$job" \
  "evalstop/best-step=$best_step" "evalstop/best-checkpoint=$best_ckpt"
if [[ ${KUEUE:-0} == 1 ]]; then
  if [[ ${DRY_RUN:-0} == 1 ]]; then
    uid='<job-uid>' wl='workload/<name>'
  else
    uid=$(kubectl "${ns[@]}" get job "$job" -o jsonpath='{.metadata.uid}')
    wl=$(kubectl "${ns[@]}" get workloads.kueue.x-k8s.io \
      -l "kueue.x-k8s.io/job-uid=$uid" -o name | head -n 1)
    if [[ -z $wl ]]; then
      echo "no Kueue workload found for job $job (uid $uid)" >&2
      exit 1
    fi
  fi
  run kubectl "${ns[@]}" patch "$wl" --type=merge -p '{"spec":{"active":false}}'
else
  run kubectl "${ns[@]}" patch job "$job" --type=merge -p '{"spec":{"suspend":true}}'
fi
echo "suspended $job; best step $best_step ${best_ckpt:+at $best_ckpt}"
