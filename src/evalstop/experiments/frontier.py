"""``frontier``: the JCT gain each stop rule buys at each precision, per eval noise and
on real curves.

Issue 5's simulator target asks for precision >= 0.95 at no less than 0.9 x the paper
rule's JCT gain, at every sigma of the noise sweep. ``default_rule`` checks the default
(and an oracle) there; this study asks whether ANY rule reaches that region. Every
candidate of the detector benchmark's lineup (``detbench.lineup.LINEUP``) runs at every
value of its main knob beside SRTF-Est on the sweep's workloads (``cusum-known`` is told
the point's noise), with the paper rule's oracle (k=2, true stops only) for reference. A
last point asks the same on real curves: the RLHF jobs take lab-corpus runs.

The same points give a platform team the trade-off itself: how much JCT a rule gives up
for each step of precision, per eval noise.

Taking the best of ~50 configurations on the seeds they are scored on is an optimistic
envelope: it favours the target. A target region that stays empty under it is strong
evidence that the target is out of reach for these rules on this workload; a filled one
would need a check on fresh seeds before it is believed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalstop.detbench.lineup import LINEUP, Candidate, for_cell
from evalstop.experiments import default_rule as dr
from evalstop.experiments import real_main
from evalstop.experiments.aggregate import Summary
from evalstop.experiments.methods import bare
from evalstop.experiments.spec import Experiment, Method, Point
from evalstop.experiments.sweep_sigma import SIGMAS

BASE = dr.MAIN_BASE
PAPER = LINEUP[0]  # the paper's rule, ``evalstop:k=K``; its main value is the paper's k=2
PAPER_K = PAPER.main


def config_label(c: Candidate, value: float) -> str:
    return f"{c.label} {c.knob}={value:g}"


def _methods(sigma: float | None) -> tuple[Method, ...]:
    """SRTF-Est alone, every configuration, the oracle. With no single eval noise (``None``,
    the lab point) the rules that must be told it are left out."""
    base = bare(BASE)
    rules = tuple(
        Method(config_label(c, v), BASE,
               c.spec(v) if sigma is None else for_cell(c.spec(v), sigma),
               baseline=base.label, x=v)
        for c in LINEUP for v in c.values if sigma is not None or not c.knows_noise)
    return (base, *rules, dr.oracle(BASE))


# The same question on real curves: RLHF jobs take lab-corpus runs (``real_main``'s lab
# point: their own eval noise, an eval every 4% of progress, the lab runs' grid).
LAB_POINT = "lab"


def point_title(point: str) -> str:
    """How the report names a point: "sigma 0.02", or the lab curves."""
    if point == LAB_POINT:
        return "lab curves (own noise)"
    return point.replace("=", " ")


EXPERIMENT = Experiment(
    name="frontier",
    title="Precision against JCT gain: every rule at every knob value, per eval noise "
          "and on real curves",
    question=(
        "Does any stop rule of the detector benchmark's lineup, at any value of its main knob, "
        f"keep precision >= {dr.TARGET_PRECISION:g} at >= {dr.TARGET_GAIN_SHARE:g} x the paper "
        "rule's JCT gain at some eval noise or on real curves, and what does each step of "
        "precision cost in JCT?"),
    points=(*(Point(dr.sigma_point(s), {"preset": "paper", "sigma": s}, _methods(s), x=s)
              for s in SIGMAS),
            Point(LAB_POINT, real_main.workload("lab"), _methods(None))),
    x_name="sigma",
    n_gpus=64,
    notes=(
        ("Each method is SRTF-Est wrapped by one rule at one knob value, stopping any job "
         "type (as the paper's rule does in the main table); JCT gain is minus the change of "
         "mean JCT against SRTF-Est alone on the same seeds."),
        ("The best of many configurations, picked on the seeds it is scored on, is an "
         "optimistic envelope: it favours the target."),
        (f"**{dr.oracle_label(BASE)}** reads the hidden hacking label and is not deployable; "
         "it is drawn for reference and is never a candidate for the target."),
        (f"Point `{LAB_POINT}`: the RLHF jobs' curves are real lab-corpus runs with their own "
         "eval noise (as in `real_main`), evals every 4% of progress; LoRA and DPO jobs keep "
         "the synthetic curves at sigma 0.02. `cusum-known` does not run there: no single "
         "noise is known for the whole workload.")),
)


@dataclass(frozen=True)
class Config:
    """One rule at one knob value at one point: mean precision and JCT gain (in %)."""

    candidate: str
    value: float
    label: str
    precision: float
    gain: float
    knows_noise: bool
    signal: str = "eval"  # what the rule reads (``Candidate.signal``)
    harmful: float = math.nan  # harmful-stop rate (``metrics.stop_cost``), mean across seeds
    saved: float = math.nan  # compute saved, mean across seeds

    @property
    def eval_only(self) -> bool:
        """Whether the rule reads the eval score and nothing else (no noise, progress, loss)."""
        return self.signal == "eval" and not self.knows_noise


@dataclass(frozen=True)
class PointFrontier:
    point: str  # the experiment point's label, e.g. "sigma=0.02" or "lab"
    configs: tuple[Config, ...]  # every deployable configuration that ran, lineup order
    oracle_gain: float = math.nan

    @property
    def title(self) -> str:
        return point_title(self.point)

    @property
    def paper(self) -> Config | None:
        return next((c for c in self.configs
                     if c.candidate == PAPER.label and c.value == PAPER_K), None)

    @property
    def floor(self) -> float:
        """The least gain the target accepts here (NaN without the paper rule's gain)."""
        return dr.gain_floor(self.paper.gain) if self.paper else math.nan

    def _pool(self, eval_only: bool) -> list[Config]:
        """``eval_only``: the rules that read the eval score alone (not ``cusum-known``, told
        the noise, nor ``stopat`` or ``loss-plateau``, which read no eval); else every rule."""
        return [c for c in self.configs if c.eval_only or not eval_only]

    def best_precise(self, eval_only: bool = True,
                     level: float = dr.TARGET_PRECISION) -> Config | None:
        """The highest gain among configurations with precision >= ``level`` (the target's)."""
        ok = [c for c in self._pool(eval_only)
              if c.precision >= level and math.isfinite(c.gain)]
        return max(ok, key=lambda c: c.gain, default=None)

    def best_harmless(self, level: float, eval_only: bool = True) -> Config | None:
        """The highest gain among configurations whose harmful-stop rate is <= ``level``:
        the frontier judged by what stops cost the tenants instead of by the label."""
        ok = [c for c in self._pool(eval_only)
              if c.harmful <= level and math.isfinite(c.gain)]
        return max(ok, key=lambda c: c.gain, default=None)

    def most_precise_at_floor(self, eval_only: bool = True) -> Config | None:
        """The highest precision among configurations whose gain reaches the floor."""
        ok = [c for c in self._pool(eval_only)
              if c.gain >= self.floor and math.isfinite(c.precision)]
        return max(ok, key=lambda c: c.precision, default=None)

    def in_target(self, eval_only: bool = False) -> tuple[Config, ...]:
        """Configurations with precision >= the target's and gain >= the floor."""
        return tuple(c for c in self._pool(eval_only)
                     if c.precision >= dr.TARGET_PRECISION and c.gain >= self.floor)

def frontier(summary: Summary, points: tuple[str, ...] | None = None,
             ) -> tuple[PointFrontier, ...]:
    """Per point (every point of the study by default), each configuration's measured
    precision and gain (never hard-coded); configurations a point did not run are left out."""
    out = []
    for p in points if points is not None else tuple(pt.label for pt in EXPERIMENT.points):
        configs = tuple(
            Config(c.label, float(v), config_label(c, v),
                   summary.value(p, config_label(c, v), "precision"),
                   dr.jct_gain(summary, p, config_label(c, v)), c.knows_noise, c.signal,
                   summary.value(p, config_label(c, v), "harmful_rate"),
                   summary.value(p, config_label(c, v), "compute_saved"))
            for c in LINEUP for v in c.values
            if summary.get(p, config_label(c, v), "jct_mean_s") is not None)
        out.append(PointFrontier(p, configs, dr.jct_gain(summary, p, dr.oracle_label(BASE))))
    return tuple(out)
