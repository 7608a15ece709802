"""Report sections by experiment name. An experiment without an entry here gets the generic
section (setup, one table of every point and method, the paper's claims); add an entry to
give a new experiment its own tables and plots."""

from __future__ import annotations

from collections.abc import Callable

from evalstop.report.blocks import Block
from evalstop.report.context import SectionContext
from evalstop.report.sections import (
    assumptions,
    claim_map,
    common,
    composability,
    default_rule,
    frontier,
    main,
    platform,
    real,
    regime,
    sweeps,
)

Renderer = Callable[[SectionContext], list[Block]]

SECTIONS: dict[str, Renderer] = {
    "platform": platform.render,
    "main": main.render,
    "composability": composability.render,
    "sigma": sweeps.render,
    "hacking": sweeps.render,
    "k": sweeps.render,
    "assumptions": assumptions.render,
    "claim_map": claim_map.render,
    "regime": regime.render,
    "default_rule": default_rule.render,
    "frontier": frontier.render,
    "real_corpus": real.render_corpus,
    "real_main": real.render_main,
}


def section_for(name: str) -> Renderer:
    return SECTIONS.get(name, common.generic)
