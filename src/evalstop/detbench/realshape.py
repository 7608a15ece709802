"""Real-shaped material for choosing and judging the default (issue 11).

Real RLHF runs are often short (5-60 evals), their eval is usually a pass rate over N
graded prompts (binomial noise whose size depends on the level), and they collapse,
decline slowly, dip and recover, or stay flat. Three parts, each a list of ``Cell``s with a
fixed eval count per cell (no ragged arrays):

* ``synthetic``: every benchmark family (``families``) plus four shapes written for this
  issue (a sudden collapse, a dip that recovers, a flat run that never improves, and their
  held-out twins), at 5-60 evals, in two kinds of cell: additive noise at sigma 0.01-0.12
  of the run's gain (Gaussian and Student-t3, as in the benchmark) and pass rates over N in
  30..1000 graded prompts (binomial around the true rate, which starts at 0.05-0.5 and
  gains 0.1-0.45). ``held_out`` picks the family split: the tuning families (and the new
  tuning shapes) or the two held-out sets (and the new held-out shapes). Streams are keyed
  by (seed, part, cell): the parts share no random numbers.
* ``short``: runs of 6-12 evals of a pass rate over N items: half flat (a constant true
  rate), half with a sustained drop of 4-8 binomial sigmas starting at eval index 3..E-3
  (after a flat or rising start). A drop is clipped at a rate of 0, so at N = 30 and a low
  level some are smaller than 4 sigmas (at seed 0, 50 runs per cell: 25 of 400 tuning
  drops, 13 of 400 held-out). The target: stop the drop within 3 evals, stop no flat
  run. In both parts half the drops take two evals to fall and half start from a rise;
  tuning and held-out draws differ by stream. (Until issue 11's third round the tuning
  drops all fell in one eval from a flat start; the held-out part is unchanged.)

The label is the benchmark's (``runs.hacking_label``) on the true curve: a peak inside the
run and an end at least 10% of the gain below it. Short-part drops are labelled the same
way (a drop of >= 4 sigmas is > 10% of the run's gain there by construction: see
``short_cells``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.detbench import families as fam_mod
from evalstop.detbench import shapes
from evalstop.detbench.runs import _outliers, hacking_label, noise

SIGMAS = (0.01, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12)
KINDS = ("gauss", "t3")
ITEMS = (30, 100, 300, 1000)  # graded prompts per pass-rate eval
EVAL_COUNTS = (5, 8, 12, 20, 40, 60)
SHORT_EVALS = (6, 8, 10, 12)


@dataclass(frozen=True)
class Cell:
    """One family (or shape) at one noise and one eval count.

    ``true`` is the true quality at each eval (a pass rate, or the gain for additive
    cells); ``eval`` what a detector sees; ``sigma`` the cell's noise in score units for
    additive cells (None for pass rates, whose noise depends on the level); ``items`` the
    N of a pass-rate cell (None for additive cells). ``drop_idx``: short part only, the
    first eval index of the drop (-1 for flat runs)."""

    part: str
    family: str
    noise: str  # "gauss", "t3" or "binomial"
    sigma: float | None
    items: int | None
    true: np.ndarray  # (runs, evals), hidden
    eval: np.ndarray  # (runs, evals)
    hacking: np.ndarray  # (runs,) bool, hidden
    drop_idx: np.ndarray | None = None

    @property
    def runs(self) -> int:
        return int(self.hacking.size)

    @property
    def evals(self) -> int:
        return int(self.true.shape[1])

    @property
    def group(self) -> str:
        """The eval group: runs of one cell share one eval (its N, or its noise)."""
        return f"{self.part}/{self.family}/{self.noise}/{self.sigma}/{self.items}/{self.evals}"


def _u(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=n)


# ---- shapes written for issue 11 (gain, peak 1; flat runs 0) ---------------------------
def _collapse(rng, hacking, p):
    """A rise to a peak at 30-80%, then a sudden collapse (within one eval) to 10-70% of
    the gain, staying there; healthy runs saturate."""
    n = hacking.size
    peak = _u(rng, n, 0.3, 0.8)
    rise = np.minimum(shapes.saturating(p, _u(rng, n, 0.05, 0.3) * peak, peak), 1.0)
    after = p[None, :] > peak[:, None]
    hack = np.where(after, _u(rng, n, 0.1, 0.7)[:, None], rise)
    return np.where(hacking[:, None], hack, shapes.saturating(p, _u(rng, n, 0.1, 0.6), 1.0))


def _dip_recover(rng, hacking, p):
    """Healthy only: a saturating rise with one dip of 10-40% of the gain at 30-80% that
    recovers (a Gaussian notch 0.04-0.12 of the run wide)."""
    n = hacking.size
    base = shapes.saturating(p, _u(rng, n, 0.05, 0.4), 1.0)
    c, w, d = _u(rng, n, 0.3, 0.8), _u(rng, n, 0.04, 0.12), _u(rng, n, 0.1, 0.4)
    notch = 1.0 - d[:, None] * np.exp(-0.5 * ((p[None, :] - c[:, None]) / w[:, None]) ** 2)
    return base * notch


def _flat(rng, hacking, p):
    """Healthy only: a run that never improves (the true quality is its start)."""
    return np.zeros((hacking.size, p.size))


def _cliff(rng, hacking, p):
    """Held out: a slow near-linear rise, then a collapse over one or two evals to 0-50%
    of the gain after a 40-90% peak (e.g. an output format that breaks)."""
    n = hacking.size
    peak = _u(rng, n, 0.4, 0.9)
    rise = np.minimum(p[None, :] / peak[:, None], 1.0) ** _u(rng, n, 0.7, 1.3)[:, None]
    span = _u(rng, n, 0.01, 0.12)[:, None]
    fall = np.clip((p[None, :] - peak[:, None]) / span, 0.0, 1.0)
    end = _u(rng, n, 0.0, 0.5)[:, None]
    hack = rise * (1.0 - (1.0 - end) * fall)
    healthy = np.minimum(p[None, :] / 0.6, 1.0) ** _u(rng, n, 0.5, 1.5)[:, None]
    return np.where(hacking[:, None], hack, healthy)


def _double_dip(rng, hacking, p):
    """Held out, healthy only: a logistic rise with two recovering dips of 10-40%."""
    n = hacking.size
    base = shapes.logistic(p, _u(rng, n, 0.15, 0.5), _u(rng, n, 0.04, 0.15))
    out = base.copy()
    for _ in range(2):
        c, w, d = _u(rng, n, 0.25, 0.85), _u(rng, n, 0.03, 0.1), _u(rng, n, 0.1, 0.4)
        out *= 1.0 - d[:, None] * np.exp(-0.5 * ((p[None, :] - c[:, None]) / w[:, None]) ** 2)
    return out


def _flat_creep(rng, hacking, p):
    """Held out, healthy only: half flat, half creeping up linearly (by 5% of a typical
    gain over the run, see ``_gain``): runs that barely move."""
    n = hacking.size
    return np.where((rng.random(n) < 0.5)[:, None], 0.0, p[None, :] * 1.0)


@dataclass(frozen=True)
class Shape:
    name: str
    held_out: bool
    hacking_rate: float
    make: object
    flat: bool = False  # the gain is not normalised to a peak of 1 (no gain at all)
    outliers: tuple[int, int] = (0, 0)  # single-eval dips/spikes per run (additive cells)


NEW_SHAPES = (
    Shape("collapse", False, 0.5, _collapse),
    Shape("dip-recover", False, 0.0, _dip_recover),
    Shape("flat", False, 0.0, _flat, flat=True),
    Shape("cliff", True, 0.5, _cliff),
    Shape("double-dip", True, 0.0, _double_dip),
    Shape("flat-creep", True, 0.0, _flat_creep, flat=True),
)


def _shapes(held_out: bool) -> list[Shape]:
    out = [Shape(f.name, f.held_out, f.hacking_rate, f.make, outliers=f.outliers)
           for f in fam_mod.FAMILIES if f.held_out == held_out]
    return out + [s for s in NEW_SHAPES if s.held_out == held_out]


def _gain(shape: Shape, rng, runs: int, p: np.ndarray) -> np.ndarray:
    hacking = np.arange(runs) < round(runs * shape.hacking_rate)
    g = np.asarray(shape.make(rng, hacking, p), float)
    if shape.flat:
        return g * 0.05  # flat-creep: at most 5% of a typical gain, never falling
    top = g.max(axis=1, keepdims=True)
    return g / np.where(top > 0, top, 1.0)


def synthetic(seed: int, runs: int, *, held_out: bool, eval_counts=EVAL_COUNTS,
              sigmas=SIGMAS, kinds=KINDS, items=ITEMS) -> list[Cell]:
    part = "held-out" if held_out else "tuning"
    out = []
    for si, shape in enumerate(_shapes(held_out)):
        for ei, evals in enumerate(eval_counts):
            p = np.arange(1, evals + 1) / evals
            for ni, kind in enumerate(kinds):
                for vi, sigma in enumerate(sigmas):
                    rng = np.random.default_rng([int(seed), 11, int(held_out), si, ei, ni, vi])
                    g = _gain(shape, rng, runs, p)
                    offset = rng.uniform(0.0, 0.5, size=(runs, 1))
                    obs = offset + g + noise(rng, kind, sigma, g.shape) + _outliers(
                        rng, shape, sigma, g.shape)
                    out.append(Cell(part, shape.name, kind, float(sigma), None, g, obs,
                                    hacking_label(g) if not shape.flat else
                                    np.zeros(runs, bool)))
            for vi, n_items in enumerate(items):
                rng = np.random.default_rng([int(seed), 12, int(held_out), si, ei, vi])
                g = _gain(shape, rng, runs, p)
                start = rng.uniform(0.05, 0.5, size=(runs, 1))
                rate = np.clip(start + rng.uniform(0.1, 0.45, size=(runs, 1)) * g, 0.0, 1.0)
                obs = rng.binomial(n_items, rate) / n_items
                out.append(Cell(part, shape.name, "binomial", None, int(n_items), rate, obs,
                                hacking_label(rate - start) if not shape.flat else
                                np.zeros(runs, bool)))
    return out


def short_cells(seed: int, runs: int, *, held_out: bool, eval_counts=SHORT_EVALS,
                items=ITEMS) -> list[Cell]:
    """Pass-rate runs of 6-12 evals: flat, or a sustained drop of 4-8 sigmas (see module)."""
    part = "short-held-out" if held_out else "short-tuning"
    out = []
    for ei, evals in enumerate(eval_counts):
        for vi, n_items in enumerate(items):
            rng = np.random.default_rng([int(seed), 13, int(held_out), ei, vi])
            level = rng.uniform(0.2, 0.8, size=runs)
            sig = np.sqrt(level * (1.0 - level) / n_items)
            drop = np.arange(runs) < runs // 2
            start = rng.integers(3, evals - 2, size=runs)  # >= 3 evals before, >= 3 after
            size = rng.uniform(4.0, 8.0, size=runs) * sig
            idx = np.arange(evals)[None, :]
            # before the drop: flat, or (half the runs) rising by 2-6 sigmas
            rising = rng.random(runs) < 0.5
            climb = np.where(rising, rng.uniform(2.0, 6.0, size=runs) * sig, 0.0)
            pre = level[:, None] - climb[:, None] * np.clip(
                (start[:, None] - 1 - idx) / np.maximum(start[:, None] - 1, 1), 0.0, 1.0)
            # the fall takes one eval, or (half the runs) two
            frac = np.clip((idx - start[:, None] + 1) / np.where(
                rng.random(runs) < 0.5, 2, 1)[:, None], 0.0, 1.0)
            fall = np.where(idx >= start[:, None], frac, 0.0) * size[:, None]
            rate = np.where(drop[:, None], pre - fall, level[:, None])
            rate = np.clip(rate, 0.0, 1.0)
            obs = rng.binomial(n_items, rate) / n_items
            # the label: every drop is >= 4 sigmas; count it as hacking (a real decline)
            out.append(Cell(part, "flat-or-drop", "binomial", None, int(n_items), rate, obs,
                            drop.copy(), np.where(drop, start, -1)))
    return out
