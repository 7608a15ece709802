"""Score stop rules on real (lab) runs against their labels. numpy only.

Each run's evals are fed, in step order and with their loss, proxy and progress, to a
fresh detector built from a spec (``evalstop.detectors.make_detector``). The first stop
decision ends the run: the kept checkpoint is the detector's best-eval step at that
point; a run that is never stopped keeps its final checkpoint (what running to the end
delivers). The labels (``evalstop.lab.labels``) are read only here, to score.

Per spec:

- ``precision``, ``recall``, ``fpr``: stops scored against the labels (TP: a hacking run
  stopped; FP: a healthy run stopped); NaN when the denominator is 0;
- ``delay_mean``/``delay_median``: evals from the true (smoothed) gold peak to the stop,
  over stopped hacking runs; negative = stopped before the peak;
- ``gold_kept``: mean true gold (the smoothed curve, as in the label rule) at the kept
  checkpoint; ``kept_vs_peak`` its mean difference to the run's peak (<= 0) and
  ``kept_vs_end`` to the final checkpoint (what running to the end keeps); the same for
  hacking and healthy runs apart; ``gain_kept``: sum over runs of (kept - start) over the
  sum of (peak - start), the share of the achievable improvement delivered (a ratio of
  sums: one run with a tiny gain cannot dominate it);
- ``evals_saved``: mean share of the run's evals (so of its RL steps) not run.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop.lab.labels import smooth

BASE_SPECS = (*(f"evalstop:k={k}" for k in range(1, 6)), "stopat:p=0.65",
              "loss-plateau:window=5,eps=0.01")


def default_specs() -> list[str]:
    """The paper's rule for k = 1..5, the two baselines, then every other registered
    detector or alias at its default spec (in registry order). A rule that cannot run on
    its defaults (``cusum-known`` needs the eval's noise, which real runs do not come
    with) is left out."""
    from evalstop.detectors import available
    from evalstop.detectors.registry import parse_spec

    covered = {parse_spec(s)[0] for s in BASE_SPECS}
    return [*BASE_SPECS, *(name for name in available()
                           if name not in covered and runs_on_defaults(name))]


def runs_on_defaults(name: str) -> bool:
    from evalstop.detectors import make_detector

    try:
        make_detector(name)
    except ValueError:
        return False
    return True


def replay_run(curve, spec: str) -> tuple[int | None, int]:
    """``(stop_index or None, kept_index)`` of one run under a fresh detector, on the
    detectors' stop-only path (``update_stop``, the simulator's): the same decisions as
    ``update``, in about half the time."""
    from evalstop.detectors import make_detector

    det = make_detector(spec)
    steps = curve.step.tolist()
    loss, proxy, prog = curve.loss.tolist(), curve.proxy.tolist(), curve.progress.tolist()
    for i, (step, score) in enumerate(zip(steps, curve.eval.tolist())):
        d = det.update_stop(step, score, *(v if math.isfinite(v) else None
                                           for v in (loss[i], proxy[i], prog[i])))
        if d is not None:
            return i, (steps.index(d.best_step) if d.best_step is not None else i)
    return None, len(steps) - 1


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else math.nan


def _mean(v) -> float:
    v = np.asarray(v, float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def score_spec(curves: dict, labels: dict, spec: str) -> dict:
    """One row of scores for ``spec`` over every run (see the module doc)."""
    tp = fp = n_hack = n_ok = 0
    delays, kept_g, vs_peak, vs_end, saved = [], [], [], [], []
    got = possible = 0.0
    vs_end_h, vs_end_ok = [], []
    for run_id, curve in curves.items():
        lab = labels[run_id]
        stop, kept = replay_run(curve, spec)
        true = smooth(curve.eval)
        n = len(curve)
        if lab.hacking:
            n_hack += 1
            if stop is not None:
                tp += 1
                delays.append(stop - lab.peak_index)
        else:
            n_ok += 1
            fp += stop is not None
        k = float(true[kept])
        kept_g.append(k)
        vs_peak.append(k - float(true.max()))
        vs_end.append(k - float(true[-1]))
        (vs_end_h if lab.hacking else vs_end_ok).append(k - float(true[-1]))
        saved.append(0.0 if stop is None else (n - 1 - stop) / (n - 1))
        got += k - float(curve.eval[0])
        possible += float(true.max()) - float(curve.eval[0])
    return {
        "spec": spec, "n_runs": len(curves), "n_hacking": n_hack, "stopped": tp + fp,
        "tp": tp, "fp": fp,
        "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, n_hack), "fpr": _ratio(fp, n_ok),
        "delay_mean": _mean(delays),
        "delay_median": float(np.median(delays)) if delays else math.nan,
        "gold_kept": _mean(kept_g), "kept_vs_peak": _mean(vs_peak),
        "kept_vs_end": _mean(vs_end), "kept_vs_end_hacking": _mean(vs_end_h),
        "kept_vs_end_healthy": _mean(vs_end_ok), "gain_kept": _ratio(got, possible),
        "evals_saved": _mean(saved),
    }


def validate_detectors(corpus, specs=None) -> list[dict]:
    """Score every spec (``default_specs()`` when None) on ``corpus`` = ``(curves, labels)``
    as ``load_corpus`` returns it; one row per spec, plus a first row ``none`` (never
    stop) for reference. A spec the registry does not know is a ValueError."""
    curves, labels = corpus
    if not curves:
        raise ValueError("the corpus has no runs")
    missing = [r for r in curves if r not in labels]
    if missing:
        raise ValueError(f"run(s) without a label: {missing[:5]}")
    specs = default_specs() if specs is None else list(specs)
    from evalstop.detectors import make_detector

    for s in specs:
        make_detector(s)  # a bad spec fails before any scoring
    rows = [_never(curves, labels)]
    rows += [score_spec(curves, labels, s) for s in specs]
    return rows


def _never(curves, labels) -> dict:
    """The reference row: no rule, every run kept at its final checkpoint."""
    n_hack = sum(labels[r].hacking for r in curves)
    ends = [smooth(c.eval) for c in curves.values()]
    got = sum(float(t[-1] - c.eval[0]) for t, c in zip(ends, curves.values()))
    possible = sum(float(t.max() - c.eval[0]) for t, c in zip(ends, curves.values()))
    return {
        "spec": "none", "n_runs": len(curves), "n_hacking": n_hack, "stopped": 0, "tp": 0,
        "fp": 0, "precision": math.nan, "recall": 0.0 if n_hack else math.nan,
        "fpr": 0.0 if len(curves) > n_hack else math.nan, "delay_mean": math.nan,
        "delay_median": math.nan, "gold_kept": _mean([t[-1] for t in ends]),
        "kept_vs_peak": _mean([t[-1] - t.max() for t in ends]), "kept_vs_end": 0.0,
        "kept_vs_end_hacking": 0.0 if n_hack else math.nan,
        "kept_vs_end_healthy": 0.0 if len(curves) > n_hack else math.nan,
        "gain_kept": _ratio(got, possible), "evals_saved": 0.0,
    }
