"""``default_rule``: the recommended default stop rule beside the paper's, in the simulator.

Issue 5 gave the project a default detector (``evalstop.detectors.DEFAULT_SPEC``, chosen
on the detector benchmark's synthetic curves). This study reruns the paper's simulator studies with both
rules so the choice is also judged on cluster outcomes (JCT, waste, quality):

* point ``paper`` (preset ``paper``, 64 GPUs): every base scheduler alone, with the paper's
  rule (``evalstop:k=2``) and with the default. The SRTF-Est rows are the main table, all
  rows together the composability study. One point serves both because they are the same
  workload; a second point would only simulate the SRTF-Est rows twice.
* points ``sigma=S``: SRTF-Est alone, with k=2 and with the default, at each eval noise of
  the ``sigma`` study.

At point ``paper`` and every sigma point, SRTF-Est also runs with an ORACLE reference,
"k=2, true stops only": the paper's rule whose stops are applied only to the jobs that are
truly hacking (the workload's hidden label; on the others the stop is ignored and the job
runs on). It is not deployable and is labelled as such. Eval observations are pre-drawn
in the workload, so a job's detector decisions do not depend on the schedule: the oracle
stops exactly the hacking jobs k=2 stops, at the same evals, and nothing else. Its JCT
gain is therefore the part of k=2's gain that its true stops earn; the rest comes from
killing healthy jobs.

``target_check`` evaluates the issue's target on the sigma sweep from a ``Summary``, and
carries that decomposition beside it (never in its verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalstop.experiments.aggregate import Summary
from evalstop.experiments.methods import DEFAULT, EVALSTOP_SPEC, bare, with_default, with_evalstop
from evalstop.experiments.spec import Experiment, Method, Point, display
from evalstop.experiments.sweep_sigma import SIGMAS
from evalstop.schedulers import SCHEDULERS
from evalstop.workload.synthetic import DEFAULT_SIGMA

MAIN_BASE = "srtf-est"
PAPER_POINT = "paper"

# The target: where the paper's rule's precision is below PRECISION, the
# default's is at least PRECISION, and its JCT gain is at least GAIN_SHARE of the paper
# rule's.
TARGET_PRECISION = 0.95
TARGET_GAIN_SHARE = 0.9


def gain_floor(paper_gain: float) -> float:
    """The least JCT gain the target accepts beside the paper rule's gain (in %).

    "No more than 10% worse": 0.9 x the paper's gain when it is positive. Written as
    gain - 10% of |gain| so a negative gain is not turned into a stricter bar."""
    return paper_gain - (1 - TARGET_GAIN_SHARE) * abs(paper_gain)


def paper_label(base: str) -> str:
    return f"EvalStop+{display(base)}"


def default_label(base: str) -> str:
    return with_default(base).label


def oracle_label(base: str) -> str:
    return f"EvalStop+{display(base)} (oracle: true stops only)"


def oracle(base: str) -> Method:
    """The paper's rule with its stops applied to truly hacking jobs only (not deployable)."""
    return Method(oracle_label(base), base, EVALSTOP_SPEC, baseline=display(base),
                  oracle_hacking_only=True)


def known_label(base: str) -> str:
    return f"Known-noise+{display(base)}"


def known(base: str, sigma: float) -> Method:
    """``cusum-known`` told the point's eval noise: what a platform that knows it can run."""
    return with_evalstop(base, f"cusum-known:sigma={sigma:g}", label=known_label(base))


def _trio(base: str, sigma: float = DEFAULT_SIGMA):
    """The base alone, with the paper's rule and with the default; on the main base, the
    oracle and the known-noise rule after them."""
    methods = (bare(base), with_evalstop(base),
               with_default(base))
    return (*methods, oracle(base), known(base, sigma)) if base == MAIN_BASE else methods


def sigma_point(sigma: float) -> str:
    return f"sigma={sigma:g}"


EXPERIMENT = Experiment(
    name="default_rule",
    title="The recommended default rule beside the paper's, in simulation",
    question=(
        f"On the paper's simulator studies, what does the recommended default (`{DEFAULT}`) "
        f"do to precision, recall, JCT and waste against the paper's rule (`{EVALSTOP_SPEC}`), "
        f"and does it keep precision >= {TARGET_PRECISION:g} where the paper's rule does not, "
        f"at no more than {100 * (1 - TARGET_GAIN_SHARE):.0f}% less JCT gain?"
    ),
    points=(
        Point(PAPER_POINT, {"preset": "paper"},
              tuple(m for base in SCHEDULERS for m in _trio(base))),
        *(Point(sigma_point(s), {"preset": "paper", "sigma": s}, _trio(MAIN_BASE, s), x=s)
          for s in SIGMAS),
    ),
    x_name="sigma",
    n_gpus=64,
    notes=(("The main table is the SRTF-Est rows of point `paper`; composability is all of "
            "its rows."),
           (f"**{oracle_label(MAIN_BASE)}** is an oracle reference, not a deployable "
            f"scheduler: the paper's rule `{EVALSTOP_SPEC}` with its stops applied only to "
            "jobs that are truly hacking (it reads the hidden label; on healthy jobs the stop "
            "is ignored and the job runs on). Eval scores are pre-drawn per job, so it stops "
            "exactly the hacking jobs k=2 stops, at the same eval, and no healthy one."),
           (f"**{known_label(MAIN_BASE)}** runs `cusum-known:sigma=S` with S the point's eval "
            "noise: the rule a platform can run when it knows its eval's noise (for example "
            "from the eval set's size). It is beside the target, not part of it.")),
)


@dataclass(frozen=True)
class SigmaCheck:
    """The target at one sigma. Gains are minus the relative JCT change vs SRTF-Est, in %.

    ``oracle_gain`` (k=2 with its true stops only) is the decomposition beside the target;
    it plays no part in ``holds``."""

    sigma: float
    paper_precision: float
    default_precision: float
    paper_gain: float
    default_gain: float
    oracle_gain: float = math.nan  # NaN when the oracle did not run
    oracle_precision: float = math.nan
    known_gain: float = math.nan  # cusum-known told the noise; NaN when it did not run
    known_precision: float = math.nan

    @property
    def in_scope(self) -> bool:
        # The target speaks only where the paper's rule falls below the bar. An undefined
        # precision (no stops) is not evidence that it clears it, so it counts as in scope.
        return not self.paper_precision >= TARGET_PRECISION

    @property
    def precision_ok(self) -> bool:
        return self.default_precision >= TARGET_PRECISION  # False on NaN

    @property
    def gain_floor(self) -> float:
        return gain_floor(self.paper_gain)

    @property
    def gain_ok(self) -> bool:
        return self.default_gain >= self.gain_floor  # False on NaN

    @property
    def holds(self) -> bool:
        return self.precision_ok and self.gain_ok

    @property
    def true_stop_share(self) -> float:
        """Share of k=2's gain its true stops earn (oracle gain / k=2 gain); NaN unless the
        k=2 gain is positive."""
        return _share(self.oracle_gain, self.paper_gain)

    @property
    def default_share(self) -> float:
        """The default's gain as a share of the oracle's true-stop gain; NaN unless the
        oracle's gain is positive."""
        return _share(self.default_gain, self.oracle_gain)


def _share(part: float, whole: float) -> float:
    return part / whole if math.isfinite(part) and whole > 0 else math.nan  # NaN > 0 is False


@dataclass(frozen=True)
class TargetCheck:
    per_sigma: tuple[SigmaCheck, ...]

    @property
    def in_scope(self) -> tuple[SigmaCheck, ...]:
        return tuple(c for c in self.per_sigma if c.in_scope)

    @property
    def met(self) -> bool:
        """True when every in-scope sigma holds both parts (vacuously with none in scope)."""
        return all(c.holds for c in self.in_scope)


def jct_gain(summary: Summary, point: str, method: str) -> float:
    """Minus the relative change of mean JCT against the method's baseline, in %; NaN when
    undefined."""
    d = summary.value(point, method, "jct_mean_s", "delta_pct")
    return -d if math.isfinite(d) else math.nan


def target_check(summary: Summary, sigmas=SIGMAS, base: str = MAIN_BASE) -> TargetCheck:
    """The issue's target on the sigma sweep, from measured means (never hard-coded)."""
    paper, default, orc = paper_label(base), default_label(base), oracle_label(base)
    kn = known_label(base)

    def gain(point: str, method: str) -> float:
        return jct_gain(summary, point, method)

    checks = []
    for s in sigmas:
        p = sigma_point(s)
        checks.append(SigmaCheck(
            sigma=s,
            paper_precision=summary.value(p, paper, "precision"),
            default_precision=summary.value(p, default, "precision"),
            paper_gain=gain(p, paper), default_gain=gain(p, default),
            oracle_gain=gain(p, orc), oracle_precision=summary.value(p, orc, "precision"),
            known_gain=gain(p, kn), known_precision=summary.value(p, kn, "precision")))
    return TargetCheck(tuple(checks))
