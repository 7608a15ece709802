"""``block-cusum`` over many jobs at once, for the simulator's planned stops: the same stop
eval and kept checkpoint as fresh ``BlockCusum`` objects fed the row eval by eval.

Two phases, split at the first merge (after ``2 * blocks`` evals; a Philly job's 20 evals
are all in the first with the default ``blocks=16``):

* **Before the first merge it is cusum-drop with two gates**, planned by
  ``cusum_drop_array.plan_rows`` (its compiled twin ``cusum_drop_jit`` with numba, its numpy
  version without). Proof, eval by eval, for n < 2 * blocks evals: every block is one eval
  and its mean ``(0.0 + x) / 1`` is x (but for a zero's sign, which changes no decision),
  so the block means are the evals; no merge happens, so the window is
  min(smooth, max(smooth_min, ceil(n / 2))) (or smooth), found again over the history when
  it widens and kept as the running best otherwise, with the same trim, clamp and ties as
  ``CusumDrop``; ``_since`` counts the same evals; the noise is ``CusumDrop``'s (stated >
  binomial at the level > ``sigma_hat`` of all the evals, which are fewer than its window
  of 200, see ``covers``); ``_judge``'s W is ``CusumDrop``'s W, over the same evals with the
  same z. The rule stops where that W reaches ``thr[n] = h + hg * log2(max(1, n / hn))``
  (computed here with the object's expression) and two gates pass: the mean of the evals in
  W's current excursion above 0 at least ``rel`` of the gain below the level, and, after
  ``hn`` evals, a gain of at least ``gmin`` sigmas; the gain is the level less the start
  level (the first window's, width smooth_min or smooth). Since thr[n] >= h, every bound of
  cusum-drop's gates (W_bar, the bound in sigmas, the count of evals below the level) still
  only skips evals where the rule cannot stop.
* **From the first merge on**, the rows not yet stopped run the object's rule job by job in
  the compiled twin ``block_cusum_jit``. Without numba (or ``EVALSTOP_JIT=0``) those rows
  are left to the objects (``done`` False): exact, and as slow as the objects on them
  (3-10 CPU-microseconds per eval; the compiled plan of 1x Philly, about 0.02).
* **With a path after ``hn`` evals on** (issue 46: the collapse test, the dead-run path,
  ``idle``, ``wander``, ``last``; the default turns on the first two), the first phase ends
  at ``hn`` evals if that comes before the merge (up to ``hn`` evals those paths change
  nothing), and the rows not stopped by then run the whole rule in the twin from their
  first eval (``block_cusum_jit.rule_rows``), the collapse test's pair history and the
  dead-run test's floor included; without numba they are left to the objects.

With ``plong`` (the progress-aware start) the plan is the same as without wherever the
eval grid keeps the job's expected eval count under ``plong`` for its first ``hn`` evals
(from then on the gain gate holds anyway); a grid that makes the job long in its first
``hn`` evals, or no grid, leaves the job to the objects.

Left to the objects too, as ``cusum_drop_array`` does: rows with a non-finite score (or,
with ``eval_n``, a score outside [0, 1], which the object rejects); a fleet noise (it pools
jobs); an option this module does not know; a subclass that changes a part of the rule;
``blocks`` over 100 (the first phase would outgrow the noise estimate's window, which
``CusumDrop`` and ``BlockCusum`` cut differently); Python 3.12+ (compensated ``sum``).
``tests/test_block_cusum_plan.py`` compares both phases with the objects.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop import jit
from evalstop.detectors import collapse_test, dead_test
from evalstop.detectors.block_cusum import BlockCusum, _expected_evals
from evalstop.detectors.cusum_drop_array import _min_drops, answerable, plan_rows
from evalstop.detectors.noise import (
    CLIP,
    CLIPPED_MEAN_ABS,
    MAD_N01,
    MAX_VALUES,
    MEAN_ABS,
    MIN_DIFFS,
)
from evalstop.detectors.stop_arrays import SUM_IN_ORDER, same_parts

# The parts of the rule repeated here: a subclass that overrides one is left to the objects.
PARTS = ("_observe", "_judge", "_smoothed", "_trim_for", "_want_width", "_refind", "_merge",
         "_eval_sigma", "_block_sigma", "_own_block_sigma", "_feed_fleet", "_late",
         "_collapse", "_no_gain", "_must_last", "_wander_sd", "_floor_note", "_dead_at",
         "_one_sigma")


def covers(det) -> bool:
    """Whether this module repeats ``det``'s rule exactly (else the objects decide)."""
    if not SUM_IN_ORDER or getattr(det, "fleet", None) is not None:
        return False
    return same_parts(det, BlockCusum, PARTS) and 2 * det.blocks - 1 <= MAX_VALUES


def late_paths(det) -> bool:
    """Whether an option of the paths after ``hn`` evals (issue 46: the wander gate, the
    dip knob, the collapse and dead-run tests, ``idle``) is on. Up to ``hn`` evals they
    change nothing, so the plan still covers the first ``hn`` evals (up to the first
    merge); the twin's ``rule_rows`` runs the rows not stopped by then."""
    return any(getattr(det, key) for key in BlockCusum.LATE)


def thresholds(det, m: int) -> np.ndarray:
    """``thr[n]``, the CUSUM's threshold after n = 0..m evals, as ``BlockCusum._judge``
    computes it."""
    return np.array([det.h + det.hg * math.log2(max(1.0, n / det.hn)) if n else det.h
                     for n in range(m + 1)])


def early_gate(det, progress) -> bool:
    """Whether ``plong`` puts the gain gate on within the first ``hn`` evals of a job on
    the eval grid ``progress`` (None: unknown, so it might)."""
    if det.plong is None:
        return False
    if progress is None:
        return True
    grid = [float(p) for p in progress][: det.hn]
    return any(_expected_evals(j + 1, p) >= det.plong for j, p in enumerate(grid))


def stop_index(det, obs: np.ndarray, progress=None):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` on the rows of ``obs``
    (see ``KDecline.stop_index``), or None where only the objects can answer. ``progress``
    is the eval grid (shared by every row): with ``plong``, a grid that makes the job long
    leaves it to the objects (the plan does not repeat the early gain gate)."""
    if not covers(det) or early_gate(det, progress):
        return None
    raw = np.asarray(obs, dtype=np.float64)
    n, m = raw.shape
    done = answerable(det, raw)
    stop_at = np.full(n, -1, dtype=np.int64)
    kept = np.full(n, -1, dtype=np.int64)
    if m == 0 or not done.any():
        return stop_at, kept, done
    late = late_paths(det)
    # evals the plan covers: up to the first merge, and up to hn evals with the late paths
    first = min(m, 2 * det.blocks - 1, det.hn if late else m)
    thr = thresholds(det, m)
    short = raw if first == m else np.ascontiguousarray(raw[:, :first])
    plan_rows(det, short, done, stop_at, kept, thr[: first + 1], (det.rel, det.gmin, det.hn))
    if first < m:
        left = done & (stop_at < 0)
        # the work the twin saves: the objects would run these rows, every eval
        use = "evalstop.detectors.block_cusum_jit" + (":late" if late else "")
        twin = jit.twin(use, int(left.sum()), m)
        if twin is None:
            done &= ~left  # the objects run these rows from the start
        elif left.any() and late:
            _rule_rows(twin, det, raw, np.flatnonzero(left), thr, stop_at, kept)
        elif left.any():
            _long_rows(twin, det, raw, np.flatnonzero(left), thr, stop_at, kept)
    return stop_at, kept, done


def _noise(twin, det):
    """(where the noise comes from, stated sigma, eval_n) as the twin takes them."""
    if det.sigma is not None:
        return twin.STATED, det.sigma, 0
    if det.eval_n is not None:
        return twin.BINOMIAL, 0.0, det.eval_n
    return twin.OWN, 0.0, 0


def _rule_rows(twin, det, raw, rows, thr, stop_at, kept) -> None:
    noise, sigma, eval_n = _noise(twin, det)
    nc = np.array([MAX_VALUES, MIN_DIFFS, CLIP, CLIPPED_MEAN_ABS, MEAN_ABS, MAD_N01])
    cc = np.array([collapse_test.REF, collapse_test.MIN_PAST, collapse_test.CLIP_PAST,
                   collapse_test.PAST_SD, collapse_test.GAIN_Z, dead_test.FLOOR_SHARE,
                   dead_test.PEAK_SHARE, dead_test.MIN_PINNED], dtype=np.float64)
    twin.rule_rows(np.ascontiguousarray(raw), rows, float(det._sign), thr, det.k, det.clip,
                   det.smooth, det.min_evals, det.trim,
                   0 if det.smooth_min is None else det.smooth_min, det.blocks, det.wblocks,
                   det.rel, det.gmin, det.hn, det.lags, det.wander, det.last, det.fast,
                   det.frel, det.dead, det.idle, noise, sigma, eval_n,
                   _min_drops(det, raw.shape[1]), nc, cc, stop_at, kept)


def _long_rows(twin, det, raw, rows, thr, stop_at, kept) -> None:
    noise, sigma, eval_n = _noise(twin, det)
    w0 = det.smooth if det.smooth_min is None else det.smooth_min
    twin.long_rows(np.ascontiguousarray(raw), rows, float(det._sign), thr, det.k, det.clip,
                   det.smooth, det.min_evals, det.trim, w0, det.blocks, det.wblocks, det.rel,
                   det.gmin, det.hn, det.lags, noise, sigma, eval_n,
                   _min_drops(det, raw.shape[1]), MIN_DIFFS, CLIP,
                   CLIPPED_MEAN_ABS, MEAN_ABS, MAD_N01, stop_at, kept)
