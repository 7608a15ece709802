"""The scheduler configurations the paper compares, built once so every study agrees.

StopAt-0.65 stops every RLHF job at 65% progress, as in the paper, so it applies to RLHF
jobs only. The loss-plateau baseline stops any job whose training loss has improved by
less than ``eps`` (relative) over the last ``window`` evals. Two settings are run:

* the detector's documented default, ``window=5, eps=0.01``;
* ``eps=0.1``, our proposal for a live baseline. With 20 evals, a window of 5 is a quarter
  of the run, and losses that decay exponentially (as fine-tuning losses do, and as the
  synthetic workload's do) rarely improve by under 1% over a quarter of training, so the
  default stops almost nothing and the comparison would be against a rule that never
  acts. 0.1 is the smallest round value at which the rule stops most converged LoRA/DPO
  jobs and some RLHF jobs. It was chosen from how often the rule fires, never from the
  hacking labels or the paper's numbers.
"""

from __future__ import annotations

from evalstop.detectors import DEFAULT_SPEC, canonical
from evalstop.experiments.spec import Method, display

EVALSTOP_SPEC = "evalstop:k=2"  # the paper's rule and default k
STOPAT_SPEC = "stopat:p=0.65"
LOSS_PLATEAU_SPEC = "loss-plateau:window=5,eps=0.01"
LOSS_PLATEAU_LIVE_SPEC = "loss-plateau:window=5,eps=0.1"


def bare(base: str) -> Method:
    """The base scheduler alone."""
    return Method(display(base), base)


def with_evalstop(base: str, spec: str = EVALSTOP_SPEC, *, label: str | None = None,
                  x: float | None = None) -> Method:
    """The base wrapped in the EvalStop overlay, compared with the bare base."""
    return Method(label or f"EvalStop+{display(base)}", base, spec, baseline=display(base), x=x)


# Canonical form, so the report names the exact rule that ran, whatever the alias says.
DEFAULT = canonical(DEFAULT_SPEC)


def with_default(base: str) -> Method:
    """The base wrapped with the project's recommended default rule (issue 5)."""
    return with_evalstop(base, DEFAULT, label=f"Default+{display(base)}")


SRTF = bare("srtf-est")
EVALSTOP_SRTF = with_evalstop("srtf-est")
DEFAULT_SRTF = with_default("srtf-est")
# The paper's motivation is RLHF reward hacking; a platform may wrap only its RLHF jobs.
# LoRA and DPO curves flatten and never hack, so this removes their false stops.
EVALSTOP_SRTF_RLHF = Method("EvalStop+SRTF-Est (RLHF only)", "srtf-est", EVALSTOP_SPEC,
                            frozenset({"rlhf"}), baseline=SRTF.label)
STOPAT = Method("StopAt-0.65", "srtf-est", STOPAT_SPEC, frozenset({"rlhf"}), baseline=SRTF.label)
LOSS_PLATEAU = Method("Loss plateau", "srtf-est", LOSS_PLATEAU_SPEC, baseline=SRTF.label)
LOSS_PLATEAU_LIVE = Method("Loss plateau (eps=0.1)", "srtf-est", LOSS_PLATEAU_LIVE_SPEC,
                           baseline=SRTF.label)
