"""The scheduler configurations the paper compares, built once so every study agrees.

StopAt-0.65 stops every RLHF job at 65% progress, as in the paper, so it applies to RLHF
jobs only. The loss-plateau baseline stops any job whose training loss has improved by
less than ``eps`` (relative) over the last ``window`` evals; it uses the detector's
documented default spec, not a setting tuned to this workload.
"""

from __future__ import annotations

from evalstop.experiments.spec import Method, display

EVALSTOP_SPEC = "evalstop:k=2"  # the paper's rule and default k
STOPAT_SPEC = "stopat:p=0.65"
LOSS_PLATEAU_SPEC = "loss-plateau:window=5,eps=0.01"


def bare(base: str) -> Method:
    """The base scheduler alone."""
    return Method(display(base), base)


def with_evalstop(base: str, spec: str = EVALSTOP_SPEC, *, label: str | None = None,
                  x: float | None = None) -> Method:
    """The base wrapped in the EvalStop overlay, compared with the bare base."""
    return Method(label or f"EvalStop+{display(base)}", base, spec, baseline=display(base), x=x)


SRTF = bare("srtf-est")
EVALSTOP_SRTF = with_evalstop("srtf-est")
STOPAT = Method("StopAt-0.65", "srtf-est", STOPAT_SPEC, frozenset({"rlhf"}), baseline=SRTF.label)
LOSS_PLATEAU = Method("Loss plateau", "srtf-est", LOSS_PLATEAU_SPEC, baseline=SRTF.label)
