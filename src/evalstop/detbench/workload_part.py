"""A third, report-only part: the project's own simulated workload (``evalstop.workload``).

The tuning and held-out families put the noise on a scale where a run's peak gain is 1.
The simulator's workload (the paper's setting) is on an absolute 0..1 quality scale: RLHF
runs rise by 0.30-0.50 and hacking runs fall by 5-27% of that rise, with eval noise sigma
0.01-0.12 in the same absolute units. This part runs its RLHF (half hacking, its own
label), LoRA and DPO curves through the same scoring, so the report shows what each rule
does on the curves the simulator will feed it. It was not used to choose anything.
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench.families import Family
from evalstop.detbench.runs import RunSet, progress_grid


def _not_drawn_here(rng, hacking, p):  # the workload module draws these curves
    raise NotImplementedError


FAMILIES = (
    Family("workload-rlhf", True, "rlhf", 0.5, (0, 0),
           "evalstop.workload RLHF curves (Gao form, KL ~ progress^2, hacking peaks at "
           "55-75%), absolute 0..1 scale", _not_drawn_here),
    Family("workload-lora", True, "lora", 0.0, (0, 0),
           "evalstop.workload LoRA curves, absolute scale", _not_drawn_here),
    Family("workload-dpo", True, "dpo", 0.0, (0, 0),
           "evalstop.workload DPO curves, absolute scale", _not_drawn_here),
)


def build(seed: int, runs: int, *, sigmas, evals: int) -> list[RunSet]:
    """Gaussian noise only (the workload's noise model), one stream per cell."""
    from evalstop.workload import curves as wl

    p = progress_grid(evals)
    grid = np.concatenate([[0.0], p])  # progress 0 gives each run's starting quality
    out = []
    for fi, fam in enumerate(FAMILIES):
        for si, sigma in enumerate(sigmas):
            rng = np.random.default_rng([int(seed), 2, fi, si])
            if fam.kind == "rlhf":
                c = wl.rlhf_curves(grid, np.arange(runs) < runs // 2, rng)
            elif fam.kind == "lora":
                c = wl.lora_curves(grid, runs, rng)
            else:
                c = wl.dpo_curves(grid, runs, rng)
            start, true = c.eval_true[:, :1], c.eval_true[:, 1:]
            gain = (true - start) / (true.max(axis=1, keepdims=True) - start)
            obs = wl.add_eval_noise(true, sigma, rng)
            out.append(RunSet(fam, float(sigma), "gauss", p, gain, c.hacking.copy(), obs,
                              c.proxy[:, 1:] if fam.kind == "rlhf" else None, c.loss[:, 1:]))
    return out
