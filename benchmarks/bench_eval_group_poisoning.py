"""Eval-group poisoning (issue 43): how far one tenant's flood moves another tenant's stops.

Tenant a runs FLOOD jobs of flat evals (0.5 every time) or of alternating 0/1 evals on the
eval group; tenant b runs 30 healthy jobs (a slow rise in noise 0.02) and 5 that decline
from eval 9, read after a's. For each way of pooling the group's noise, the script prints
(and writes to --out, JSON) the sigma b's jobs read at the end and b's stops:

* ``pooled``: one ``FleetNoise`` over every job of the group (what ``evalstop watch`` did);
* ``private``: each tenant its own estimate (an eval group not declared shared);
* ``shared``: the median of the tenants' estimates within ``max_factor`` (1.5) of b's own,
  each tenant's estimate from its 8 most recently started jobs (the first 64 second
  differences of each).

The data are synthetic (numpy Generator, --seed); the default ``max_factor`` was set
before this script existed, not tuned on its output. Runs in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from evalstop.detectors import make_detector
from evalstop.detectors.fleet import FleetNoise
from evalstop.detectors.shared_noise import DEFAULT_MAX_FACTOR, SharedNoise
from evalstop.fileio import atomic_write, check_out_file

EVALS, FLOOD, HEALTHY, DECLINING = 20, 300, 30, 5
FLOODS = {"flat": [0.5] * EVALS, "noisy": [0.0, 1.0] * (EVALS // 2)}


def victim(rng: np.random.Generator) -> list[tuple[bool, list[float]]]:
    """b's jobs as (declines, evals)."""
    jobs = []
    for _ in range(HEALTHY):
        jobs.append((False, list(0.5 + 0.002 * np.arange(EVALS)
                                 + 0.02 * rng.standard_normal(EVALS))))
    for _ in range(DECLINING):
        x = 0.5 + 0.02 * rng.standard_normal(EVALS)
        x[8:] -= 0.03 * np.arange(1, EVALS - 7)
        jobs.append((True, list(x)))
    return jobs


def feed(values: list[float], fleet) -> bool:
    det = make_detector("default", fleet=fleet)
    for step, v in enumerate(values, 1):
        det.update(step, v)
        if det.stopped:
            return True
    return False


def scenario(pooling: str, flood: str | None, jobs) -> dict:
    if pooling == "pooled":
        one = FleetNoise()
        fleet_a = fleet_b = lambda job: one  # noqa: E731
        read = one.sigma
    else:
        group = SharedNoise("g", max_factor=DEFAULT_MAX_FACTOR if pooling == "shared" else 1.0)
        fleet_a = lambda job: group.view("a", job)  # noqa: E731 - each job its own view
        fleet_b = lambda job: group.view("b", job)  # noqa: E731
        read = group.view("b").sigma
    if flood is not None:
        for i in range(FLOOD):
            feed(FLOODS[flood], fleet_a(f"f-{i}"))
    stops = [(declines, feed(values, fleet_b(f"b-{j}")))
             for j, (declines, values) in enumerate(jobs)]
    n_a = None if pooling == "pooled" or flood is None else group.tenants["a"].count
    return {"pooling": pooling, "flood": flood or "none", "sigma_b": read(),
            "a_differences": n_a,
            "healthy_stopped": sum(s for d, s in stops if not d),
            "declining_stopped": sum(s for d, s in stops if d)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=43)
    p.add_argument("--out", default=None, metavar="FILE.json")
    args = p.parse_args(argv)
    if args.out:  # refused before the runs, not after them
        try:
            check_out_file(args.out)
        except (ValueError, OSError) as e:
            raise SystemExit(f"bench_eval_group_poisoning: error: {e}") from None
    jobs = victim(np.random.default_rng(args.seed))
    rows = [scenario(pooling, flood, jobs) for pooling in ("pooled", "private", "shared")
            for flood in (None, "flat", "noisy")]
    print(f"b: {HEALTHY} healthy and {DECLINING} declining jobs; a: {FLOOD} flood jobs; "
          f"max_factor {DEFAULT_MAX_FACTOR}")
    for r in rows:
        print(f"{r['pooling']:8} flood {r['flood']:6} sigma b reads {r['sigma_b']:.4g}  "
              f"healthy stopped {r['healthy_stopped']}/{HEALTHY}  "
              f"declining stopped {r['declining_stopped']}/{DECLINING}"
              + ("" if r["a_differences"] is None
                 else f"  a's estimate from {r['a_differences']} differences"))
    if args.out:
        with atomic_write(args.out, encoding="utf-8") as fh:
            json.dump({"seed": args.seed, "flood_jobs": FLOOD, "max_factor": DEFAULT_MAX_FACTOR,
                       "rows": rows}, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
