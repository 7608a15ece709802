"""EvalStop: stop reward-hacked RLHF jobs from their eval scores (arXiv 2606.04145)."""

from evalstop.detectors import Decision, Detector, make_detector, parse_spec

__all__ = ["Decision", "Detector", "make_detector", "parse_spec"]
__version__ = "0.1.0"
