"""What a report section gets: one experiment's run, its summary, and where figures go."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalstop.experiments.aggregate import Summary
from evalstop.experiments.runner import ExperimentRun

FIG_DIR = "figures"


@dataclass
class SectionContext:
    run: ExperimentRun
    summary: Summary
    out_dir: Path
    # Every study's summary in this report, by name: for sections that set one study beside
    # another (the paper-assumptions columns beside the paper preset's).
    others: dict[str, Summary] = field(default_factory=dict)

    @property
    def experiment(self):
        return self.run.experiment

    def figure(self, stem: str) -> tuple[Path, str]:
        """(file path to write, path relative to the report) of a figure of this section."""
        rel = f"{FIG_DIR}/{self.experiment.name}_{stem}.png"
        path = self.out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path, rel

    def ci(self, point: str, method: str, metric: str, scale: float = 1.0):
        """(mean, lo, hi) across seeds, scaled (e.g. 100 for %); NaNs if absent."""
        r = self.summary.get(point, method, metric)
        if r is None:
            return (float("nan"),) * 3
        return (r["mean"] * scale, r["lo"] * scale, r["hi"] * scale)

    def delta_ci(self, point: str, method: str, metric: str):
        """(relative change %, per-seed lo, hi) against the method's baseline."""
        r = self.summary.get(point, method, metric)
        if r is None:
            return (float("nan"),) * 3
        return (r["delta_pct"], r["delta_lo"], r["delta_hi"])

    def kept(self, method: str):
        for k in self.run.kept:
            if k.method == method:
                return k
        return None
