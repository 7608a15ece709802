"""``claim_map``: where on the workload-knob plane do the paper's main-table figures hold?

A grid of late-run SNR (healthy RLHF runs' late gain per eval, in noise units) x decline
SNR (hacking runs' post-peak loss per eval, in noise units), one panel per eval count,
each cell a main-table workload (preset ``paper``, 200 jobs, 64 GPUs, sigma 0.02) whose
RLHF curves are stretched to those SNRs (``evalstop.workload.knobs``). Every cell runs
SRTF-Est alone, with ``evalstop:k=2`` on every job, and with it on RLHF jobs only (the
LoRA/DPO watch knob). The report draws precision, recall, FPR and the JCT change as
heatmaps, outlines the cells in the paper's region, and marks the paper preset, the
``paper-assumptions`` preset and the SNRs measured on the real lab runs.

It is a wide grid of cheap cells, so it runs on a fifth of the run's seeds (4 of 20; 1
with --quick): a cell's figures are coarser than the main studies'.
"""

from __future__ import annotations

from evalstop.experiments.main_table import MAIN_N_JOBS
from evalstop.experiments.methods import EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF, SRTF
from evalstop.experiments.spec import Experiment, Point
from evalstop.workload.build import DEFAULT_SIGMA
from evalstop.workload.curves import eval_grid
from evalstop.workload.knobs import MIN_DECLINE_SCALE, default_snrs

LATE_SNRS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
DECLINE_SNRS = (0.25, 0.5, 1.0, 2.0, 4.0)
N_EVALS = (10, 20, 40)
SEED_FRACTION = 0.2


def label(n_evals: int, late: float, decline: float) -> str:
    return f"evals {n_evals}, late {late:g}, decline {decline:g}"


def _valid(n_evals: int, decline: float) -> bool:
    """A decline SNR below the grid's floor would make the shallowest hacking runs flat
    tops (``knobs.MIN_DECLINE_SCALE``): such cells are left out (blank in the maps)."""
    floor = MIN_DECLINE_SCALE * default_snrs(eval_grid(1.0 / n_evals), DEFAULT_SIGMA)[1]
    return decline >= floor


def _points() -> tuple[Point, ...]:
    out = []
    for n in N_EVALS:
        for late in LATE_SNRS:
            for decline in DECLINE_SNRS:
                if not _valid(n, decline):
                    continue
                out.append(Point(label(n, late, decline),
                                 {"preset": "paper", "sigma": DEFAULT_SIGMA,
                                  "eval_interval": 1.0 / n, "late_snr": late,
                                  "decline_snr": decline},
                                 (SRTF, EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF), x=late,
                                 n_jobs=MAIN_N_JOBS))
    return tuple(out)


EXPERIMENT = Experiment(
    name="claim_map",
    title="Claim map: where the paper's main-table figures hold",
    question=(
        "Over which late-run SNR, decline SNR and eval count do evalstop:k=2's precision, "
        "recall and FPR reach the paper's main table (precision >= 97%, recall >= 98%, "
        "FPR <= 2% together), and where do the paper preset and real RLHF runs lie?"
    ),
    points=_points(),
    x_name="late-run SNR",
    n_gpus=64,
    seed_fraction=SEED_FRACTION,
    notes=(f"Each cell: preset 'paper', {MAIN_N_JOBS} jobs, sigma {DEFAULT_SIGMA:g}, load "
           "0.9; the cell's SNRs are set by stretching the RLHF curves, never the noise.",),
)
