#!/usr/bin/env bash
# Suspend a Kubernetes Job that EvalStop stopped (its pods are deleted, its GPUs freed),
# or, for a Job admitted by Kueue, deactivate its Kueue Workload (Kueue owns the Job's
# suspend field, so the Workload's spec.active is the switch that sticks). The best
# checkpoint is recorded as an annotation on the Job.
#
#   evalstop watch --jsonl /logs --db watch.db \
#     --checkpoint-template 's3://ckpt/{tenant}/{job}/checkpoint-{best_step}' \
#     --action 'examples/actions/kubectl-suspend.sh --tenant {tenant} -- {job} {best_step} {best_checkpoint}'
#
# Scope: every kubectl call is in the tenant's namespace ($NAMESPACE_PREFIX + TENANT),
# so a tenant's log can only reach Jobs in its own namespace. JOB must be a Kubernetes
# object name (lowercase DNS-1123). Exits non-zero on anything it did not do.
# Environment: NAMESPACE_PREFIX (default: none), KUEUE=1 to deactivate the Kueue
# Workload instead of suspending the Job, DRY_RUN=1 to print the commands and exit 3.
set -euo pipefail
usage() { echo "usage: $0 --tenant TENANT -- JOB BEST_STEP [BEST_CHECKPOINT]" >&2; exit 2; }
tenant=
while [[ $# -gt 0 ]]; do
  case $1 in
    --tenant) [[ $# -ge 2 ]] || usage; tenant=$2; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[[ $# -ge 2 && $# -le 3 && -n $tenant ]] || usage
job=$1 best_step=$2 best_ckpt=${3:-}
ns=${NAMESPACE_PREFIX:-}$tenant
dns1123='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ ${#ns} -le 63 && $ns =~ $dns1123 ]] || { echo "bad namespace $(printf '%q' "$ns")" >&2; exit 2; }
[[ ${#job} -le 63 && $job =~ $dns1123 ]] || { echo "bad job name $(printf '%q' "$job")" >&2; exit 2; }
[[ $best_step =~ ^[0-9]*$ ]] || { echo "bad best step" >&2; exit 2; }
[[ ! $best_ckpt =~ [[:cntrl:]] ]] || { echo "bad checkpoint" >&2; exit 2; }
dry=${DRY_RUN:-0}
run() { if [[ $dry == 1 ]]; then printf '%q ' "$@"; echo; else "$@"; fi; }

run kubectl --namespace "$ns" annotate --overwrite job -- "$job" \
  "evalstop/best-step=$best_step" "evalstop/best-checkpoint=$best_ckpt"
if [[ ${KUEUE:-0} == 1 ]]; then
  if [[ $dry == 1 ]]; then
    wl='workload/<name>'
  else
    uid=$(kubectl --namespace "$ns" get job -o jsonpath='{.metadata.uid}' -- "$job")
    wl=$(kubectl --namespace "$ns" get workloads.kueue.x-k8s.io \
      -l "kueue.x-k8s.io/job-uid=$uid" -o name | head -n 1)
    if [[ -z $uid || -z $wl ]]; then
      echo "no Kueue workload found for job $job in namespace $ns" >&2
      exit 1
    fi
  fi
  run kubectl --namespace "$ns" patch --type=merge -p '{"spec":{"active":false}}' -- "$wl"
else
  run kubectl --namespace "$ns" patch job --type=merge -p '{"spec":{"suspend":true}}' -- "$job"
fi
if [[ $dry == 1 ]]; then
  echo "dry run: nothing suspended ($job in namespace $ns)"
  exit 3
fi
echo "suspended $job in namespace $ns; best step $best_step ${best_ckpt:+at $best_ckpt}"
