"""Detector specs NAME[:key=value,...]."""

import pytest

from evalstop.detectors import DEFAULT_SPEC, available, canonical, make_detector, parse_spec
from evalstop.detectors.registry import detector_factory


@pytest.mark.parametrize("spec, name, args", [
    ("evalstop:k=2", "evalstop", {"k": "2"}),
    ("stopat:p=0.65", "stopat", {"p": "0.65"}),
    ("loss-plateau:window=5,eps=0.01", "loss-plateau", {"window": "5", "eps": "0.01"}),
    (" evalstop : k = 3 ", "evalstop", {"k": "3"}),
    ("evalstop", "evalstop", {}),
])
def test_parse(spec, name, args):
    assert parse_spec(spec) == (name, args)


@pytest.mark.parametrize("spec, message", [
    ("nope:k=2", "unknown detector 'nope'"),
    ("zzzz:k=2", "unknown detector 'zzzz'; known: block-cusum, cusum-drop, "),
    ("cusum-drp", r"unknown detector 'cusum-drp' \(did you mean 'cusum-drop'\?\)"),
    ("defualt", r"\(did you mean 'default'\?\)"),
    ("evalstop:q=2", "unknown key 'q' for"),
    ("evalstop:kk=2", r"unknown key 'kk' \(did you mean 'k'\?\)"),
    ("evalstop:k=two", "k='two' is not an int$"),
    ("cusum-drop:h=high", "h='high' is not a float$"),
    ("evalstop:k", "expected key=value"),
    ("evalstop:k=1,k=2", "given twice"),
    ("evalstop:k=0", "k must be >= 1"),
    ("", "empty detector spec"),
    ("stopat:p=2", "p must be in"),
])
def test_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        make_detector(spec)


def test_canonical_and_default_alias():
    assert canonical("evalstop") == "evalstop:k=2"
    assert canonical("loss-plateau:eps=0.1") == "loss-plateau:window=5,eps=0.1"
    assert make_detector("default").spec == canonical(DEFAULT_SPEC)
    assert "default" in available() and "evalstop" in available()


def test_factory_makes_fresh_independent_detectors():
    new = detector_factory("evalstop:k=1", mode="min")
    a, b = new(), new()
    a.update(1, 0.5)
    assert a.update(2, 0.6).stop and not b.stopped and a.mode == b.mode == "min"
