"""Stop rules. Each is a small ``Detector`` subclass registered under its spec name."""

from evalstop.detectors.base import Decision, Detector
from evalstop.detectors.cusum_drop import CusumDrop
from evalstop.detectors.cusum_known import CusumKnown
from evalstop.detectors.fleet import FleetNoise
from evalstop.detectors.kdecline import KDecline
from evalstop.detectors.loss_plateau import LossPlateau
from evalstop.detectors.noise_drop import NoiseDrop
from evalstop.detectors.patience import Patience
from evalstop.detectors.registry import (
    alias,
    available,
    canonical,
    make_detector,
    parse_spec,
    register,
)
from evalstop.detectors.slope_test import SlopeTest
from evalstop.detectors.stopat import StopAt

for _cls in (KDecline, StopAt, LossPlateau, Patience, NoiseDrop, SlopeTest, CusumDrop,
             CusumKnown):
    register(_cls)

# The recommended default, chosen on the tuning part of the detector benchmark (see
# evalstop.detbench and README.md, "Which rule to choose"); the paper's rule stays as evalstop:k=2.
# It replaced noise-drop:m=1.4,n=2,smooth=9, which is still registered unchanged.
DEFAULT_SPEC = "cusum-drop:h=2.0,k=0.75,clip=2.0,smooth=9,min_evals=6,trim=2"
alias("default", DEFAULT_SPEC)

__all__ = [
    "DEFAULT_SPEC",
    "CusumDrop",
    "CusumKnown",
    "Decision",
    "Detector",
    "FleetNoise",
    "KDecline",
    "LossPlateau",
    "NoiseDrop",
    "Patience",
    "SlopeTest",
    "StopAt",
    "alias",
    "available",
    "canonical",
    "make_detector",
    "parse_spec",
    "register",
]
