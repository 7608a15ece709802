"""``evalstop action kubernetes``: suspend one Kubernetes Job by its UID, in the tenant's
namespace only.

    evalstop watch ... --action 'evalstop action kubernetes --tenant {tenant}
        --job-id {job_id} --best-step {best_step} --best-checkpoint {best_checkpoint}'

The id is the Job's ``metadata.uid`` (a name is reused by the next Job of that name; a
UID never is): give the pod ``EVALSTOP_JOB_ID`` from the downward API, ``fieldRef:
metadata.labels['batch.kubernetes.io/controller-uid']``. The Job is looked up in
namespace ``PREFIX + TENANT`` (``--namespace-prefix``, default ``$NAMESPACE_PREFIX``)
by that UID: one in another namespace is never found. A Job already suspended, complete
or failed is exit 10 (already ended). Otherwise its annotations ``evalstop/note``,
``evalstop/best-step`` and ``evalstop/best-checkpoint`` are set and it is suspended
(``spec.suspend``: its pods are deleted, its GPUs freed), or with ``--kueue`` its Kueue
Workload is deactivated (Kueue owns the Job's suspend field; ``spec.active`` sticks).
"""

from __future__ import annotations

import json
import os
import re

from evalstop.actions import (
    ALREADY_ENDED,
    DRY_RUN,
    REFUSED,
    USAGE,
    Outcome,
    add_common,
    description,
    finish,
    first_line,
    note,
    same_owner,
    tool,
)

DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def add_parser(sub):
    p = sub.add_parser("kubernetes", help="suspend a Kubernetes Job by UID, only in the "
                       "tenant's namespace", description=description(__doc__))
    add_common(p)
    p.add_argument("--namespace-prefix", default=os.environ.get("NAMESPACE_PREFIX", ""),
                   help="the tenant's namespace is PREFIX + TENANT (default: "
                        "$NAMESPACE_PREFIX, else none)")
    p.add_argument("--kueue", action="store_true",
                   help="deactivate the Job's Kueue Workload instead of suspending the Job")
    return p


def _kubectl(ns: str, *argv: str):
    r = tool(["kubectl", "--namespace", ns, *argv], "kubectl")
    if r.returncode != 0:
        raise Outcome(REFUSED, f"kubectl {argv[0]} failed: {first_line(r.stderr)}")
    return r.stdout


def _items(text: str) -> list[dict]:
    try:
        return list(json.loads(text).get("items") or [])
    except (ValueError, AttributeError):
        raise Outcome(REFUSED, "kubectl printed no JSON list") from None


def _ended(job: dict) -> str | None:
    if (job.get("spec") or {}).get("suspend"):
        return "suspended"
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return cond["type"].lower()
    return None


def act(args) -> str:
    ns = args.namespace_prefix + args.tenant
    if len(ns) > 63 or not DNS1123.fullmatch(ns):
        raise Outcome(USAGE, f"namespace {ns!r} is not a Kubernetes namespace name")
    if not UID.fullmatch(args.job_id):
        raise Outcome(USAGE, f"--job-id {args.job_id!r} is not a Job UID")
    jobs = [j for j in _items(_kubectl(ns, "get", "jobs", "-o", "json"))
            if (j.get("metadata") or {}).get("uid") == args.job_id]
    if not jobs:
        raise Outcome(REFUSED, f"no Job with UID {args.job_id} in namespace {ns}; nothing "
                               "stopped")
    meta = jobs[0]["metadata"]
    name = meta.get("name", "")
    if not same_owner(meta.get("namespace", ""), ns) or not DNS1123.fullmatch(name):
        raise Outcome(REFUSED, f"Job {args.job_id} is not in namespace {ns}; nothing stopped")
    where = f"Job {name} (UID {args.job_id}) in namespace {ns}"
    if args.kueue:
        wls = _items(_kubectl(ns, "get", "workloads.kueue.x-k8s.io", "-l",
                              f"kueue.x-k8s.io/job-uid={args.job_id}", "-o", "json"))
        if not wls:
            raise Outcome(REFUSED, f"no Kueue workload for {where}")
        if (wls[0].get("spec") or {}).get("active") is False:
            raise Outcome(ALREADY_ENDED, f"{where}: its workload is already inactive; "
                                         "nothing to do")
    ended = _ended(jobs[0])
    if ended:
        raise Outcome(ALREADY_ENDED, f"{where} is already {ended}; nothing to do")
    if args.dry_run:
        raise Outcome(DRY_RUN, f"dry run: would suspend {where}; nothing stopped")
    _kubectl(ns, "annotate", "--overwrite", "job", "--", name, f"evalstop/note={note(args)}",
             f"evalstop/best-step={args.best_step}",
             f"evalstop/best-checkpoint={args.best_checkpoint}")
    if args.kueue:
        wl = wls[0]["metadata"]["name"]
        _kubectl(ns, "patch", "--type=merge", "-p", '{"spec":{"active":false}}', "--",
                 f"workload.kueue.x-k8s.io/{wl}")
        return f"deactivated the Kueue workload of {where}; {note(args)}"
    _kubectl(ns, "patch", "job", "--type=merge", "-p", '{"spec":{"suspend":true}}', "--",
             name)
    return f"suspended {where}; {note(args)}"


def run(args) -> int:
    return finish("kubernetes", act, args)
