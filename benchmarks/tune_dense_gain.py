"""Re-choose the default's gain requirement (``hn``, ``gmin``) on TUNING material only.

    python benchmarks/tune_dense_gain.py [--seed 0] [--runs 6] [--out benchmarks/results/rule21]
        [--small-path DIR]

Writes ``tune_dense.json`` and ``tune_dense.md``. Nothing held out is built or read here;
``benchmarks/judge_long_default.py --candidate SPEC --name judge_dense`` judges the pick once.

Why: judged on the first held-out dense lab corpus (``lab2_dense_*``, the trigram world),
the default caught 0.273 of the hacking runs (noise stated) against 1.0 for the default
before it. Those runs gain almost nothing before they fall (few preference pairs: the
proxy is wrong from the start), and the default asks, after ``hn`` = 20 evals, for a gain
of ``gmin`` = 5 noise sigmas before any stop. That corpus has now been seen, so it is not
used here (nor counted as held out by the judge); the choice is made on new material.

Material (tuning parts only), each scored as ``tune_long_default.py`` scores it:

* ``long`` (stated noise and fleet prior), ``short`` (stated) and ``families`` (own noise
  and the cell's sigma stated): ``tune_long_default.py``'s tuning material and bars;
* ``dense (bigram)``: the first dense lab corpus (``lab_dense_*``, world 1), a tuning part
  already;
* ``dense small-gain``: the new small-gain tuning corpus (``lab2s_tune_*``,
  ``evalstop.lab.dense_small``: the trigram world, seeds 200-201, 151 evals a run), noise
  stated (the corpus' median gold standard error) and own;
* ``synthetic 21-60``: the tuning real-shaped pass-rate families (``realshape.synthetic``,
  ``held_out=False``) at 40 and 60 evals, noise stated: reported (the runs where the gain
  requirement first bites), not a bar.

Candidates: the default with ``hn`` in {20, 32, 48} and ``gmin`` in {0, 2, 3, 5} (12, the
default among them); every other option as the default's.

Criterion, fixed before any candidate was scored: keep the candidates whose shortfall on
each of ``tune_long_default.py``'s bars is at most the default's shortfall on it (the
default itself misses two bars on this material, the fleet's tenant-harmful stops and the
fixed short bar, so "meets every bar" alone would keep nothing), and that stop no more
non-hacking runs with a smoothed (tenant) loss above 5% than the default on either dense
tuning corpus (noise stated). Among those, take the highest recall on the small-gain dense
tuning corpus (stated); ties: higher mean long-run catch rate, lower mean long-run
tenant-harmful rate, lower mean delay, then the default. If only the default passes, the
default stays.

The runner-up (the other candidate with the smallest summed shortfall; ties: higher
small-gain recall) is named too, so that the judge can show, for the record, what the
held-out parts say about the trade-off; it is not chosen. It was added to the outputs
after the scoring (``--rescore`` applies the criterion to the saved rows again), before
anything held out was read.

Outcome (seed 0): only the default passes; every candidate that asks less of the gain
stops more long non-hacking runs with a tenant loss above 5% on the tuning material,
above all with the fleet prior.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
import time
from pathlib import Path

from evalstop.detbench import realshape
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.longshape import long_cells
from evalstop.detbench.longshape_score import score_long
from evalstop.detbench.realshape_score import score as score_cells
from evalstop.detectors import DEFAULT_SPEC
from evalstop.parallel import parallel_map

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_long_default import dense_lab_cells, small_gain_cells, tenant_figures, with_option
from tune_long_default import LONG_MODES, PREVIOUS, bar_parts, families_score, shortfalls

HNS = (20, 32, 48)
GMINS = (0.0, 2.0, 3.0, 5.0)
SYN_EVALS = (40, 60)


def candidates() -> list[str]:
    return [with_option(with_option(DEFAULT_SPEC, "hn", hn), "gmin", f"{g:g}")
            for hn, g in itertools.product(HNS, GMINS)]


def is_default(spec: str) -> bool:
    def opts(s):
        return dict(p.split("=") for p in s.partition(":")[2].split(","))
    a, b = opts(spec), opts(DEFAULT_SPEC)
    return a.keys() == b.keys() and all(float(a[k]) == float(b[k]) for k in a)


def dense_score(spec: str, cell) -> dict:
    out = {}
    for mode in ("stated", "own"):
        row = score_cells(spec, [cell], mode)
        row.update(tenant_figures(spec, [cell], mode))
        row["tenant_harmful_stops"] = round((row["tenant_harmful"] or 0.0)
                                            * int((~cell.hacking).sum()))
        out[mode] = row
    return out


@functools.lru_cache(maxsize=1)
def material(seed: int, runs: int, short_runs: int, family_runs: int, synthetic_runs: int,
             small_path: str | None) -> dict:
    """The tuning material (deterministic from its arguments, so each worker builds its own)."""
    long = long_cells(seed, runs, held_out=False, freqs=(1, 2, 4))
    assert all(c.part == "long-tuning" for c in long)
    syn = [c for c in realshape.synthetic(seed, synthetic_runs, held_out=False,
                                          eval_counts=SYN_EVALS) if c.noise == "binomial"]
    assert all(c.part == "tuning" for c in syn)
    dense = {"dense (bigram)": next(c for n, c in dense_lab_cells() if "bigram" in n)}
    small = small_gain_cells(("tuning",), small_path)
    assert len(small) == 1, "the small-gain tuning corpus is missing"
    dense["dense small-gain"] = small[0][1]
    return {"long": long, "short": realshape.short_cells(seed, short_runs, held_out=False),
            "families": runs_mod.build(seed, family_runs, held_out=False), "syn": syn,
            "dense": dense}


def score_row(job: tuple) -> dict:
    spec, key = job
    m = material(*key)
    return {"spec": spec, "default": is_default(spec),
            "long": {mode: score_long(spec, m["long"], mode) for mode in LONG_MODES},
            "short": score_cells(spec, m["short"], "stated"),
            "families": families_score(spec, m["families"]),
            "dense": {name: dense_score(spec, c) for name, c in m["dense"].items()},
            "synthetic_21_60": score_cells(spec, m["syn"], "stated")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--family-runs", type=int, default=10)
    ap.add_argument("--synthetic-runs", type=int, default=4)
    ap.add_argument("--small-path", default=None,
                    help="folder of the packed small-gain corpora (default: the shipped ones)")
    ap.add_argument("--jobs", type=int, default=1, help="candidates scored in parallel")
    ap.add_argument("--out", default="benchmarks/results/rule21")
    ap.add_argument("--rescore", action="store_true",
                    help="only apply the criterion again to --out's tune_dense.json rows")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.rescore:
        old = json.loads((out / "tune_dense.json").read_text())
        write(out, choose(old["rows"]), seed=old["seed"], runs=old["runs"],
              previous=old["previous_default_families"], wall_s=old["wall_s"])
        return
    t0 = time.perf_counter()
    key = (args.seed, args.runs, args.short_runs, args.family_runs, args.synthetic_runs,
           args.small_path)
    previous = families_score(PREVIOUS, material(*key)["families"])
    rows = parallel_map(score_row, [(spec, key) for spec in candidates()], workers=args.jobs,
                        desc="candidates", unit="spec")
    for row in rows:
        row["shortfalls"] = shortfalls(row, previous)
        row["shortfall"] = sum(row["shortfalls"].values())
        print(summary(row), flush=True)
    write(out, choose(rows), seed=args.seed, runs=args.runs, previous=previous,
          wall_s=round(time.perf_counter() - t0, 1))


def choose(rows: list[dict]) -> dict:
    """The criterion of the docstring over scored rows: the passing ones, the pick and the
    runner-up (the non-default row with the smallest summed shortfall; ties: higher
    small-gain dense recall), which is judged for the record, never chosen."""
    base = next(r for r in rows if r["default"])

    def passes(r):
        if any(v > base["shortfalls"][k] + 1e-12 for k, v in r["shortfalls"].items()):
            return False
        return all(r["dense"][n]["stated"]["tenant_harmful_stops"]
                   <= base["dense"][n]["stated"]["tenant_harmful_stops"] for n in r["dense"])

    def mean(r, key):
        return sum(r["long"][m][key] or 0.0 for m in LONG_MODES) / len(LONG_MODES)

    def small_recall(r):
        return r["dense"]["dense small-gain"]["stated"]["recall"]

    passing = [r for r in rows if passes(r)]
    pick = max(passing, key=lambda r: (small_recall(r), mean(r, "caught"),
                                       -mean(r, "tenant_harmful"),
                                       -mean(r, "delay_share_median"), r["default"]))
    runner = min((r for r in rows if not r["default"]),
                 key=lambda r: (r["shortfall"], -small_recall(r)))
    return {"rows": rows, "passing": passing, "pick": pick, "runner_up": runner}


def write(out: Path, chosen: dict, *, seed: int, runs: int, previous: dict,
          wall_s: float) -> None:
    rows, passing, pick = chosen["rows"], chosen["passing"], chosen["pick"]
    verdict = (f"{len(passing)} of {len(rows)} candidates (the default among them) are at "
               "least as good as the default on every tuning bar")
    result = {"seed": seed, "runs": runs, "default": DEFAULT_SPEC,
              "verdict": verdict, "pick": pick["spec"], "pick_is_default": pick["default"],
              "runner_up": chosen["runner_up"]["spec"],
              "passing": [r["spec"] for r in passing],
              "seen_before_choice": ["every tuning part here"],
              "not_used": ["lab2_dense_* (trigram dense, seen when the default was judged: "
                           "no longer blind, not used to choose)",
                           "lab2s_held_* (the new held-out part: never read here)"],
              "previous_default_families": previous, "wall_s": wall_s, "rows": rows}
    (out / "tune_dense.json").write_text(json.dumps(result, indent=1))
    lines = [f"Tuning material only (seed {seed}, {runs} runs per long cell). "
             f"{verdict}.", "", f"Pick: `{pick['spec']}`"
             + (" (the default: it stays)" if pick["default"] else ""), "",
             f"Runner-up (smallest summed shortfall of the others; judged for the record, "
             f"not chosen): `{chosen['runner_up']['spec']}`", "", "```"]
    lines += [("* " if r in passing else "  ") + summary(r) for r in rows]
    lines += ["```", "", "`*`: passes the criterion (see the script's docstring).", ""]
    (out / "tune_dense.md").write_text("\n".join(lines))
    print(verdict, "\npick:", pick["spec"])


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def summary(r: dict) -> str:
    opts = dict(p.split("=") for p in r["spec"].partition(":")[2].split(","))
    parts = [f"hn={opts['hn']} gmin={opts['gmin']}", *bar_parts(r)]
    for name, d in r["dense"].items():
        s = d["stated"]
        parts.append(f"{name}: recall {_f(s['recall'])} fpr {_f(s['fpr'])} "
                     f"tenant-harmful {s['tenant_harmful_stops']}")
    parts.append(f"syn40-60 recall {_f(r['synthetic_21_60']['recall'])}")
    parts.append(f"shortfall {r['shortfall']:.3f}")
    return " | ".join(parts)


if __name__ == "__main__":
    main()
