"""What shadow mode costs the controller: a backlog ingested with and without it.

The shipped lab corpus (120 runs x 26 evals) copied COPIES times under new job names,
spread over 4 tenants' logs, ingested by one controller with ``--once``: first with no
shadow rule, then with each tenant in dry run and 3 candidate rules (4 rules followed per
job), then the same ended at once (``--shadow-end-after 0``: every job scored in the last
poll). Prints evals/s and the state file's size for each, as JSON. Timings are
indicative, not a test.

    python benchmarks/bench_watch_shadow.py [--copies 10]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import tempfile
import time
import tomllib
from importlib import resources

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.policy import PolicyTenancy, parse_policy

TENANTS = ("t0", "t1", "t2", "t3")
PLAIN = "".join(f"[tenants.{t}]\n" for t in TENANTS)
SHADOW = ('shadow = ["evalstop:k=2", "default:sigma=0.01", "evalstop:k=3"]\n'
          '[defaults]\ndry_run = true\n' + PLAIN)


def write_logs(root: str, copies: int) -> int:
    path = resources.files("evalstop") / "data" / "lab_corpus.jsonl.gz"
    with gzip.open(str(path), "rt") as fh:
        recs = [json.loads(line) for line in fh]
    n = 0
    for t in TENANTS:
        os.makedirs(os.path.join(root, t))
    for c in range(copies):
        t = TENANTS[c % len(TENANTS)]
        with open(os.path.join(root, t, f"c{c}.jsonl"), "w") as fh:
            for r in recs:
                fh.write(json.dumps({**r, "job": f"{r['job']}-c{c}"}) + "\n")
                n += 1
    return n


def ingest(root: str, db: str, policy: str, end_after: float) -> tuple[float, int]:
    pol = parse_policy(tomllib.loads(policy), "bench")
    store = StateStore(db)
    ctl = Controller(store, [JsonlDirSource(root, tenancy=PolicyTenancy(pol))], policy=pol,
                     shadow_end_after=end_after, err=io.StringIO(), out=io.StringIO(),
                     max_jobs=10**6)
    t0 = time.perf_counter()
    ctl.run_until_idle()
    took = time.perf_counter() - t0
    ctl.close()
    return took, os.path.getsize(db)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    args = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "logs")
        n = write_logs(root, args.copies)
        out["evals"] = n
        for name, policy, end_after in (("no_shadow", PLAIN, 3600.0),
                                        ("shadow_4_rules", SHADOW, 3600.0),
                                        ("shadow_4_rules_ended", SHADOW, 0.0)):
            took, size = ingest(root, os.path.join(d, f"{name}.db"), policy, end_after)
            out[name] = {"seconds": round(took, 2), "evals_per_s": round(n / took),
                         "db_mb": round(size / 2**20, 1)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
