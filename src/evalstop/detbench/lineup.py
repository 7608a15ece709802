"""The detectors the benchmark compares, each with the knob its precision-recall curve
sweeps and the value the table reports."""

from __future__ import annotations

from dataclasses import dataclass

from evalstop.detectors import canonical

# In a lineup spec, stands for the cell's noise sigma: the rules that are told the eval noise
# (``cusum-known``) get the sigma the cell's noise was drawn with. For Student-t cells that
# is the scale matched to the Gaussian's interquartile range, not the t's standard deviation.
CELL_SIGMA = "{sigma}"


def for_cell(spec: str, sigma: float) -> str:
    """The spec a detector is built from in a cell of noise ``sigma``."""
    return spec.replace(CELL_SIGMA, repr(float(sigma)))


def same_rule(a: str, b: str) -> bool:
    """Whether two specs name the same rule (canonically; a cell-sigma spec only itself)."""
    if CELL_SIGMA in a or CELL_SIGMA in b:
        return a == b
    return canonical(a) == canonical(b)


@dataclass(frozen=True)
class Candidate:
    label: str
    template: str  # a spec with "{}" where the knob's value goes
    knob: str
    values: tuple[float, ...]
    main: float  # the value reported in the tables
    signal: str  # what the rule reads

    def spec(self, value: float) -> str:
        return self.template.format(f"{value:g}")

    @property
    def main_spec(self) -> str:
        return self.spec(self.main)

    @property
    def knows_noise(self) -> bool:
        """Whether the rule is told the eval noise (its template holds the cell's sigma)."""
        return CELL_SIGMA in self.template


LINEUP: tuple[Candidate, ...] = (
    Candidate("evalstop (paper)", "evalstop:k={}", "k", (1, 2, 3, 4, 5, 6), 2, "eval"),
    Candidate("patience", "patience:n={},min_delta=0", "n", (1, 2, 3, 4, 5, 6, 8), 3, "eval"),
    Candidate("noise-drop", "noise-drop:m={},n=2,smooth=9", "m",
              (0.5, 0.75, 1.0, 1.25, 1.4, 1.75, 2.0, 2.5, 3.0), 1.4, "eval"),
    Candidate("cusum-drop", "cusum-drop:h={},k=0.75,clip=2,smooth=9,min_evals=6,trim=2", "h",
              (1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 4.0), 2.0, "eval"),
    Candidate("cusum-known (noise given)", "cusum-known:sigma={{sigma}},h={}", "h",
              (1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0), 1.75, "eval + the eval's noise sigma"),
    Candidate("slope", "slope:window=8,alpha={}", "alpha",
              (0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001), 0.01, "eval"),
    Candidate("stopat", "stopat:p={}", "p", (0.5, 0.65, 0.8), 0.65, "progress"),
    Candidate("loss-plateau", "loss-plateau:window=5,eps={}", "eps",
              (0.001, 0.003, 0.01, 0.03), 0.01, "training loss"),
)


def quick(lineup: tuple[Candidate, ...] = LINEUP) -> tuple[Candidate, ...]:
    """A thinned lineup for quick mode: the main value and the two ends of each sweep."""
    out = []
    for c in lineup:
        keep = sorted({c.values[0], c.main, c.values[-1]}, key=c.values.index)
        out.append(Candidate(c.label, c.template, c.knob, tuple(keep), c.main, c.signal))
    return tuple(out)
