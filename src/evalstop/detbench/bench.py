"""The detector benchmark: every candidate over every cell of both parts, pooled.

``run_detector_benchmark(out_dir, seed, quick)`` is the entry point used by
``evalstop bench-detectors`` and by ``evalstop reproduce``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from evalstop.detbench import calibration, detectability, workload_part
from evalstop.detbench import lineup as lineup_mod
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.families import END_RATIO, FAMILIES, MIN_DROP
from evalstop.detbench.scoring import Tally, run_detector, tally
from evalstop.detectors import DEFAULT_SPEC, canonical
from evalstop.parallel import parallel_map
from evalstop.progress import stage

PARTS = ("tuning", "held_out", "fresh", "workload")
HELD_OUT_PARTS = ("held_out", "fresh")
TARGET = {"precision": 0.95, "recall": 0.80, "quality": 0.97}
# The default was picked at tuning precision >= 0.96: a margin over the 0.95 target for
# families it has not seen (the held-out part came out as the report shows).
SELECT_PRECISION = 0.96
FULL_RUNS, QUICK_RUNS = 50, 4
QUICK_SIGMAS = (0.01, 0.06, 0.12)


@dataclass(frozen=True)
class BenchConfig:
    seed: int = 0
    runs: int = FULL_RUNS
    sigmas: tuple[float, ...] = runs_mod.SIGMAS
    noises: tuple[str, ...] = runs_mod.NOISES
    evals: int = runs_mod.EVALS
    lineup: tuple[lineup_mod.Candidate, ...] = lineup_mod.LINEUP

    @classmethod
    def make(cls, seed: int = 0, quick: bool = False, runs: int | None = None) -> BenchConfig:
        if runs is not None and runs < 1:
            raise ValueError(f"runs must be >= 1, got {runs}")
        if quick:
            return cls(seed, runs or QUICK_RUNS, QUICK_SIGMAS, lineup=lineup_mod.quick())
        return cls(seed, runs or FULL_RUNS)

    def specs(self) -> list[str]:
        """Every spec to run: each candidate's sweep, then the default if no sweep has it."""
        out = [c.spec(v) for c in self.lineup for v in c.values]
        if self.default_key(out) is None:
            out.append(canonical("default"))
        return out

    @staticmethod
    def default_key(specs: list[str]) -> str | None:
        return next((s for s in specs if lineup_mod.same_rule(s, "default")), None)


def _ratio_rows(tallies: dict[str, Tally]) -> dict[str, dict]:
    return {spec: t.metrics() for spec, t in tallies.items()}


def snr_specs(cfg: BenchConfig, specs: list[str]) -> tuple[str, ...]:
    """The rules whose recall the report breaks down by decline SNR: the paper's, the default."""
    return tuple(dict.fromkeys((cfg.lineup[0].main_spec, cfg.default_key(specs))))


def evaluate(cfg: BenchConfig, *, progress: bool = True) -> tuple[dict, dict, dict]:
    """Tallies per (part, family, sigma, noise) cell and spec; per (part, spec) of
    ``snr_specs`` the hacking runs and stops by decline-SNR bucket; and per cell and K of
    ``calibration.RUNS`` the known-noise rule told a sigma measured from K other runs."""
    specs = cfg.specs()
    snr = snr_specs(cfg, specs)
    by_snr = {(part, spec): detectability.empty() for part in PARTS for spec in snr}
    with stage("bench-detectors: building the run sets", enabled=progress) as shown:
        sets = {}
        for part in ("tuning", "held_out", "fresh"):
            shown.step(part)
            sets[part] = runs_mod.build(cfg.seed, cfg.runs, held_out=part != "tuning",
                                        fresh=part == "fresh", sigmas=cfg.sigmas,
                                        noises=cfg.noises, evals=cfg.evals)
        shown.step("workload")
        sets["workload"] = workload_part.build(cfg.seed, cfg.runs, sigmas=cfg.sigmas,
                                               evals=cfg.evals)
    known = calibration.known_candidate(cfg.lineup)
    todo = [_Cell(cfg, tuple(specs), snr, known, part, pi, ci, rs)
            for pi, (part, rsets) in enumerate(sets.items()) for ci, rs in enumerate(rsets)]
    # One task per cell, in this process by default; on Ray's workers under --ray.
    done = parallel_map(_run_cell, todo, workers=1, progress=progress, desc="bench-detectors",
                        unit="cell")
    cells: dict[tuple, dict[str, Tally]] = {}
    measured: dict[tuple, dict[int, Tally]] = {}
    for cell, (tallies, snr_counts, meas) in zip(todo, done):
        key = cell.key
        cells[key] = tallies
        for spec, counts in snr_counts.items():
            by_snr[cell.part, spec] += counts
        if meas is not None:
            measured[key] = meas
    return cells, by_snr, measured


@dataclass(frozen=True)
class _Cell:
    """One (part, family, sigma, noise) cell of the benchmark: every spec on its runs."""

    cfg: BenchConfig
    specs: tuple[str, ...]
    snr: tuple[str, ...]
    known: lineup_mod.Candidate | None
    part: str
    pi: int
    ci: int
    rs: runs_mod.RunSet

    @property
    def key(self) -> tuple:
        return (self.part, self.rs.family.name, self.rs.sigma, self.rs.noise)


def _run_cell(cell: _Cell) -> tuple[dict, dict, dict | None]:
    """A cell's tallies per spec, its decline-SNR counts per spec of ``snr``, and (held-out
    parts, when the lineup has the known-noise rule) its tallies per calibration size K."""
    rs, tallies, snr_counts = cell.rs, {}, {}
    for spec in cell.specs:
        out = run_detector(spec, rs)
        tallies[spec] = tally(rs, out)
        if spec in cell.snr:
            snr_counts[spec] = detectability.counts(rs, out)
    meas = None
    if cell.known is not None and cell.part in HELD_OUT_PARTS:
        meas = {}
        for k in calibration.RUNS:
            sigma = calibration.measured_sigma(cell.cfg.seed, (cell.pi, cell.ci), rs.sigma,
                                               rs.noise, k, cell.cfg.evals)
            spec = calibration.spec(cell.known, sigma)
            meas[k] = tally(rs, run_detector(spec, rs))
    return tallies, snr_counts, meas


def _pool(cells: dict, keep) -> dict[str, Tally]:
    out: dict[str, Tally] = defaultdict(Tally)
    for key, per_spec in cells.items():
        if keep(key):
            for spec, t in per_spec.items():
                out[spec] += t
    return dict(out)


def select_default(pooled_tuning: dict[str, dict], min_precision: float) -> str | None:
    """The selection rule, applied to the tuning part only: the highest recall among the
    specs whose precision reaches ``min_precision`` (ties: higher precision)."""
    ok = [(m["recall"], m["precision"], spec) for spec, m in pooled_tuning.items()
          if m["precision"] is not None and m["precision"] >= min_precision]
    return max(ok)[2] if ok else None


def summarise(cfg: BenchConfig, cells: dict, by_snr: dict | None = None,
              measured: dict | None = None) -> dict:
    specs = cfg.specs()
    default = cfg.default_key(specs)
    tuning = [f for f in FAMILIES if not f.held_out]
    held = [f for f in FAMILIES if f.held_out and not f.fresh]
    fresh = [f for f in FAMILIES if f.fresh]
    summary: dict = {
        "config": {
            "seed": cfg.seed, "runs_per_cell": cfg.runs, "evals_per_run": cfg.evals,
            "sigmas": list(cfg.sigmas), "noises": list(cfg.noises),
            "t_df": runs_mod.T_DF, "hacking_min_drop": MIN_DROP, "hacking_end_ratio": END_RATIO,
            "families": [{"name": f.name, "part": part, "kind": f.kind,
                          "hacking_rate": f.hacking_rate, "description": f.description}
                         for part, fams in (("tuning", tuning), ("held_out", held),
                                            ("fresh", fresh),
                                            ("workload", workload_part.FAMILIES))
                         for f in fams],
        },
        "default_spec": default,
        "default_alias": DEFAULT_SPEC,
        "detectors": [{"label": c.label, "knob": c.knob, "values": list(c.values),
                       "main_spec": c.main_spec, "signal": c.signal} for c in cfg.lineup],
        "parts": {},
    }
    for part in PARTS:
        in_part = [k for k in cells if k[0] == part]
        fams = list(dict.fromkeys(k[1] for k in in_part))
        summary["parts"][part] = {
            "families": fams,
            "pooled": _ratio_rows(_pool(cells, lambda k, p=part: k[0] == p)),
            "by_family": {f: _ratio_rows(_pool(cells, lambda k, p=part, f=f: k[:2] == (p, f)))
                          for f in fams},
            "by_sigma": {str(s): _ratio_rows(_pool(cells, lambda k, p=part, s=s: k[0] == p
                                                   and k[2] == s)) for s in cfg.sigmas},
            "by_noise": {n: _ratio_rows(_pool(cells, lambda k, p=part, n=n: k[0] == p
                                              and k[3] == n))
                         for n in dict.fromkeys(k[3] for k in in_part)},
        }
    for (part, spec), table in (by_snr or {}).items():
        d = summary["parts"][part].setdefault("detectability", {})
        d[spec] = {"buckets": detectability.rows(table),
                   "visible_recall": detectability.visible_recall(table)}
    tuned = summary["parts"]["tuning"]["pooled"]
    summary["selection"] = {
        "rule": (f"highest tuning-part recall with tuning precision >= {SELECT_PRECISION}, "
                 "among the rules that need no noise sigma"),
        # Only rules that run on the eval alone can be a default: cusum-known needs the noise.
        "selected_on_tuning": select_default({s: tuned[s] for s in specs
                                              if lineup_mod.CELL_SIGMA not in s},
                                             SELECT_PRECISION),
    }
    summary["target"] = _target(summary, default)
    known = calibration.known_candidate(cfg.lineup)
    if known is not None:  # the same target for a platform that gives the rule its eval noise
        summary["target_known_noise"] = _target(summary, known.main_spec)
    if measured:
        summary["measured_noise"] = _measured(cells, measured, default, known.main_spec)
    return summary


def _measured(cells: dict, measured: dict, default: str, known: str) -> dict:
    """The target on both held-out parts (each, and pooled) for the default, the known-noise
    rule told each cell's true sigma, and told a sigma measured from K calibration runs."""
    rules = [("default (noise estimated per job)", default),
             ("cusum-known, true sigma given", known),
             *((f"cusum-known, sigma measured from {n} runs", known) for n in calibration.RUNS)]
    # Per held-out cell, one tally per row of the table, keyed by the row's label.
    held = {key: {rules[0][0]: cells[key][default], rules[1][0]: cells[key][known],
                  **{label: measured[key][n]
                     for (label, _), n in zip(rules[2:], calibration.RUNS)}}
            for key in measured}
    pooled = {part: _pool(held, lambda k, p=part: k[0] == p) for part in HELD_OUT_PARTS}
    both = _pool(held, lambda k: True)
    rows = []
    for label, spec in rules:
        m = both[label].metrics()
        rows.append({"label": label, "spec": spec, **TARGET,
                     **{part: pooled[part][label].metrics() for part in HELD_OUT_PARTS},
                     "both": m, "met_both": _met(m), "shortfall_both": _shortfall(m)})
    return {"runs": list(calibration.RUNS), "rows": rows}


def _target(summary: dict, spec: str) -> dict:
    """The target on the held-out part (the verdict) and on the fresh part (its blind check)."""
    held = summary["parts"]["held_out"]["pooled"][spec]
    fresh = summary["parts"]["fresh"]["pooled"][spec]
    return {**TARGET, "spec": spec, "held_out": held, "met": _met(held),
            "shortfall": _shortfall(held), "fresh": fresh}


def target_on(t: dict, part: str) -> tuple[dict, bool, dict[str, float | None]]:
    """A target record's pooled numbers on one held-out part, whether they meet the target,
    and by how much they miss it."""
    m = t[part]
    return m, _met(m), _shortfall(m)


def _met(m: dict) -> bool:
    return all(m[k] is not None and m[k] >= v for k, v in TARGET.items())


def shortfall_text(short: dict[str, float | None]) -> str:
    """How far a missed target is, for a sentence; a metric that is undefined (no stops, or
    no hacking runs in the part) is said so rather than left out."""
    parts = [f"{k} {v:.3f}" for k, v in short.items() if v]
    parts += [f"{k} undefined" for k, v in short.items() if v is None]
    return "short by " + ", ".join(parts)


def _shortfall(m: dict) -> dict[str, float | None]:
    return {k: None if m[k] is None else round(max(0.0, v - m[k]), 4) for k, v in TARGET.items()}


def run_detector_benchmark(
    out_dir, seed: int = 0, quick: bool = False, *, runs: int | None = None,
    progress: bool = True,
) -> dict:
    """Run the benchmark, write JSON, CSV, Markdown and PNG plots into ``out_dir``, and
    return the summary (the content of ``detectors.json``)."""
    from evalstop.detbench import report  # matplotlib loads only when writing

    start = time.perf_counter()
    cfg = BenchConfig.make(seed, quick, runs)
    cells, by_snr, measured = evaluate(cfg, progress=progress)
    summary = summarise(cfg, cells, by_snr, measured)
    with stage("bench-detectors: writing tables and plots", enabled=progress):
        report.write_all(Path(out_dir), cfg, summary, start)
    return summary
