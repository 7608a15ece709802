"""Fit the ``fitted`` workload's RLHF curves to measured runs, and keep a part out to judge it.

The real runs are the lab corpora the package ships (``evalstop.lab``): two worlds
evaluated 26 times a run on fresh samples, and four dense corpora evaluated at every step
on one fixed eval set (151-501 evals a run). No public run is shipped with a licence that
allows it, so none is used. A platform refits on its own logs with ``--logs`` (a folder of
JSONL eval logs, TensorBoard event files or an MLflow file store, ``own_logs``, labelled by
the lab's stated rule on each complete curve).

**Split** (deterministic, stated): a run is held out iff the SHA-256 of
``"<corpus>/<run id>"``, read as a number, is divisible by ``HOLD_OUT_EVERY`` (a third of
the runs). The fit reads the other runs only; the goodness-of-fit check and the report
compare the generator with the held-out runs.

**The fit** is the empirical joint distribution of the fit part's runs: per class (hacking,
healthy), every run's measured shape (``evalstop.workload.shape_stats``) turned into the
generator's parameters, drawn whole so that a run's peak, fall and noise keep the relation
they had. Measured noise is mapped to the generator's: for a fixed-set run, the residual
autocorrelation and the smoothed residual's scale are inverted for white noise smoothed by
a Gaussian kernel (``ell_from_measured``), carried to other eval grids as the kernel's
width in progress units (``ell``); fresh-sample runs have white noise. The share of hacking runs is the fit
part's, for RLHF jobs; LoRA and DPO runs are not measured here and never hack.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from evalstop.workload.shape_stats import AR_WINDOW, run_stats, table, window

FIT_FILE = "fitted_workload.json"
HOLD_OUT_EVERY = 3
CLASSES = ("hacking", "healthy")
# Rounding of the parameters written to the JSON: enough for the generator, short to read.
DIGITS = 4


@dataclass(frozen=True)
class RealRun:
    corpus: str
    run_id: str
    progress: np.ndarray
    eval: np.ndarray
    hacking: bool
    eval_set: str  # "fresh" (new samples per eval) or "fixed" (one eval set, every eval)

    @property
    def key(self) -> str:
        return f"{self.corpus}/{self.run_id}"


def held_out(key: str) -> bool:
    """The split rule: held out iff sha256(key) is divisible by ``HOLD_OUT_EVERY``."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % HOLD_OUT_EVERY == 0


def split(runs: list[RealRun]) -> tuple[list[RealRun], list[RealRun]]:
    """``(fit part, held-out part)`` by ``held_out``."""
    return ([r for r in runs if not held_out(r.key)], [r for r in runs if held_out(r.key)])


def _shipped_corpora():
    """(name, eval set, loader) of every shipped real corpus."""
    from evalstop.lab.corpus import load_corpus
    from evalstop.lab.dense import load_dense_corpus
    from evalstop.lab.dense_small import load_small_corpus

    return (
        ("lab", "fresh", lambda: load_corpus()),
        ("lab2", "fresh", lambda: load_corpus(world="trigram")),
        ("lab_dense", "fixed", lambda: load_dense_corpus()),
        ("lab2_dense", "fixed", lambda: load_dense_corpus(world="trigram")),
        ("lab2s_tune", "fixed", lambda: load_small_corpus("small-tuning")),
        ("lab2s_held", "fixed", lambda: load_small_corpus("small-held-out")),
    )


def shipped_runs() -> list[RealRun]:
    """Every run of the shipped real corpora, with its label."""
    out = []
    for name, eval_set, load in _shipped_corpora():
        curves, labels = load()
        out += [RealRun(name, r, c.progress, c.eval, labels[r].hacking, eval_set)
                for r, c in curves.items()]
    return out


def log_corpus(folder: str | Path, *, metric: str = "eval", progress: bool = False):
    """The labelled runs of a platform's own eval logs under ``folder``: JSONL logs,
    TensorBoard event files, MLflow file stores (``evalstop.workload.own_logs``)."""
    from evalstop.workload.own_logs import read_own_runs

    return read_own_runs(folder, metric=metric, progress=progress)


def log_runs(folder: str | Path, *, eval_set: str = "fresh", metric: str = "eval",
             own=None) -> tuple[list[RealRun], list[str]]:
    """The runs of ``log_corpus(folder)`` (or of ``own``, already read) as ``RealRun``s,
    and the skipped ones: progress is the record's where every record has it, else step /
    last step; a run's corpus is its file, folder or store."""
    own = log_corpus(folder, metric=metric) if own is None else own
    runs = []
    for key, c in own.curves.items():
        prog = c.progress
        if not (np.all(np.isfinite(prog)) and np.all(np.diff(prog) > 0)):
            prog = (c.step - c.step[0]) / float(c.step[-1] - c.step[0])
        run_id = key[len(own.source[key]) + 1:] or own.name[key]
        runs.append(RealRun(own.source[key], run_id, np.asarray(prog, float), c.eval,
                            own.labels[key].hacking, eval_set))
    return runs, own.skipped


# --- from measured noise to the generator's correlated noise --------------------------
# Fixed-set noise is modelled as white noise smoothed by a Gaussian kernel of sd ``ell``
# evals: correlation exp(-d**2 / (4 ell**2)) between evals d apart. An AR(1) process
# cannot do it: detrended by a 25-eval mean its lag-1 autocorrelation stays below about
# 0.8 for any coefficient, and the real dense runs' reaches 0.9.

def _residual_moments(ell: float, w: int) -> tuple[float, float]:
    """(variance, lag-1 correlation) of ``x - centred mean over w`` for stationary noise
    of unit variance smoothed over ``ell`` evals (0: white), away from the ends."""
    k = w + int(np.ceil(6 * ell)) + 2
    idx = np.arange(-k, k + 1)
    d = idx[:, None] - idx[None, :]
    gamma = np.exp(-(d * d) / (4.0 * ell * ell)) if ell > 0 else np.eye(idx.size)
    half = w // 2

    def resid(at):
        a = -(np.abs(idx - at) <= half).astype(float) / w
        a[idx == at] += 1.0
        return a

    a, b = resid(0), resid(1)
    var = float(a @ gamma @ a)
    return var, float(a @ gamma @ b) / var


MAX_ELL = 50.0  # evals; beyond it the residual's autocorrelation no longer moves


def ell_from_measured(ac: float) -> float:
    """The smoothing width (evals) whose residual lag-1 autocorrelation (``AR_WINDOW``
    mean) is ``ac``: monotone, solved by bisection; 0 at or below white noise's."""
    if not np.isfinite(ac) or ac <= _residual_moments(0.0, AR_WINDOW)[1]:
        return 0.0
    lo, hi = 0.0, MAX_ELL
    if ac >= _residual_moments(hi, AR_WINDOW)[1]:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _residual_moments(mid, AR_WINDOW)[1] < ac else (lo, mid)
    return (lo + hi) / 2.0


def marginal_over_measured(ell: float, n: int) -> float:
    """The noise's sd over what ``shape_stats`` measures as ``noise`` on ``n`` evals."""
    w = window(n)
    return math.sqrt((1.0 - 1.0 / w) / _residual_moments(ell, w)[0])


def _params(run: RealRun, st: dict) -> dict:
    """The generator's parameters of one measured run."""
    n = st["n_evals"]
    ell = ell_from_measured(st["ar1"]) if run.eval_set == "fixed" else 0.0
    fin = {k: (0.0 if not np.isfinite(v) else float(v)) for k, v in st.items()}
    # The smoothing width in progress units, so it carries to any eval grid.
    out = {"n_evals": n, "ell": ell / (n - 1), "sd": marginal_over_measured(ell, n),
           "gain_snr": max(fin["gain_snr"], 0.0)}
    if run.hacking:
        half = min(max(st["fall_half"], 0.05), 0.95) if np.isfinite(st["fall_half"]) else 0.5
        out.update(peak_at=fin["peak_at"], fall_snr=max(fin["fall_snr"], 0.0),
                   fall_c=math.log(1.0 - half) / math.log(0.5))
    else:
        out.update(rise_at=fin["rise_at"], drift=fin["drift"])
    return {"corpus": run.corpus,
            **{k: (round(v, DIGITS) if isinstance(v, float) else v) for k, v in out.items()}}


def measure(runs: list[RealRun]) -> list[dict]:
    return [run_stats(r.progress, r.eval) for r in runs]


def fit(runs: list[RealRun], *, command: str = "", sources: str = "shipped") -> dict:
    """The fit's JSON (as a dict) from all runs: split, fitted on one part, both parts'
    tables beside it. Fewer than two runs of a class in the fit part is a ValueError."""
    fit_part, held = split(runs)
    fit_stats = measure(fit_part)
    per_class = {c: [_params(r, s) for r, s in zip(fit_part, fit_stats, strict=True)
                     if r.hacking == (c == "hacking")] for c in CLASSES}
    for c, rows in per_class.items():
        if len(rows) < 2:
            raise ValueError(f"the fit part has {len(rows)} {c} run(s); need at least 2")
    corpora = {}
    for r in runs:
        d = corpora.setdefault(r.corpus, {"eval_set": r.eval_set, "runs": 0, "held_out": 0,
                                          "hacking": 0})
        d["runs"] += 1
        d["held_out"] += held_out(r.key)
        d["hacking"] += r.hacking
    return {
        "description": ("The fitted workload's RLHF curves: the empirical joint distribution "
                        "of the fit part's measured runs (evalstop.workload.fit)."),
        "command": command,
        "sources": sources,
        "split_rule": (f"held out iff int(sha256('<corpus>/<run id>'), 16) % "
                       f"{HOLD_OUT_EVERY} == 0"),
        "corpora": corpora,
        "hacking_share": {"rlhf": float(np.mean([r.hacking for r in fit_part])),
                          "lora": 0.0, "dpo": 0.0},
        "runs": per_class,
        "table": {"fit": table(fit_stats, [r.hacking for r in fit_part]),
                  "held_out": table(measure(held), [r.hacking for r in held])},
    }


# The shipped corpora that judge stop rules (``evalstop.lab``: the second world and the
# held-out dense corpora). A stop rule tuned on the fitted preset should not see their runs.
JUDGING_CORPORA = ("lab2", "lab2_dense", "lab2s_held")


def without_corpora(fit: dict, corpora=JUDGING_CORPORA) -> dict:
    """The fit with the runs of ``corpora`` left out (e.g. to tune a stop rule on the
    fitted shapes without the runs that judge it). Fewer than two runs of a class left is a
    ValueError."""
    runs = {c: [r for r in fit["runs"][c] if r.get("corpus") not in set(corpora)]
            for c in CLASSES}
    for c, rows in runs.items():
        if len(rows) < 2:
            raise ValueError(f"leaving out {list(corpora)} leaves {len(rows)} {c} run(s)")
    return {**fit, "runs": runs}


def load_fit(path: str | Path | None = None) -> dict:
    """The fit's JSON: the shipped one (``evalstop/data/fitted_workload.json``) when
    ``path`` is None. A file that is not a fit is a ValueError naming what is missing."""
    try:
        if path is None:
            text = (resources.files("evalstop") / "data" / FIT_FILE).read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text)
    except OSError as exc:
        raise ValueError(f"cannot read the fit {path or FIT_FILE}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the fit {path or FIT_FILE} is not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not all(
            isinstance(data.get("runs", {}).get(c), list) and len(data["runs"][c]) >= 2
            for c in CLASSES) or "hacking_share" not in data:
        raise ValueError(f"{path or FIT_FILE} is not a workload fit (needs runs.hacking, "
                         "runs.healthy and hacking_share)")
    return data
