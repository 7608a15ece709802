"""Choose a preset for platforms whose runs wander, on TUNING material only.

    python benchmarks/tune_wandering.py [--seed 0] [--runs 20] [--long-runs 6] [--out DIR]
        [--figures DIR] [--plot-only]

Writes ``wandering_tune.json``, ``wandering_tune.md`` and ``wandering_tune.png`` (default
``benchmarks/results/issue46``; the plot copied to ``--figures``, default
``docs/figures/issue46``; ``--plot-only`` rewrites the markdown and redraws the plot from the
stored JSON). Held-out material is never built here:
``benchmarks/judge_progress.py --candidate`` judges the pick once, at a fresh seed.

The default keeps issue 21's catches (``wander_frontier.py`` shows why it cannot also meet
issue 46's still-rising target): this looks for the rule a platform would run instead
when its runs' levels wander like issue 46's and it knows each run's length. Every rule
is told each eval's progress, (j + 1) / evals. Candidates: the default with
``plong=50`` (``tune_progress.py``'s pick: it takes the stops in the first 20 evals
away) and every setting of the options that act after the 20th eval, ``wander`` in
``WANDERS``, ``lags`` in ``LAGS`` and ``last`` in ``LASTS``. Material as
``tune_progress.py`` (seed ``--seed``, tuning parts; noise stated and not stated).

A setting passes when, in both noise modes, it meets issue 46's own targets on the
tuning parts: still-rising runs stopped harmfully <= 1%, recovering dips <= 10%,
collapses' median delay <= 2 evals after the fall's start (long and short), dead runs
stopped >= 0.9 (long and short). Among those passing: the highest catch rate on issue
21's long hacking runs at 1x (mean of both modes: what the preset gives up is stated,
not hidden), then the lower still-rising harm, then the smaller ``last``, ``wander``,
``lags``. When none passes, the smallest summed shortfall.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from evalstop.detectors import DEFAULT_SPEC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_failshapes import parse, tuning_args, tuning_mats
from tune_progress import DEAD_STOPPED, DELAY_EVALS, MODES, score
from tune_progress import line as progress_line

PLONG = 50
WANDERS = (0, 2, 4, 6)
LAGS = (4, 8)
LASTS = (0, 0.2, 0.3)
RISING = 0.01
DIPS = 0.10

_MATS: dict = {}


def spec_of(wander: float, lags: int, last: float) -> str:
    return f"default:plong={PLONG},wander={wander},lags={lags},last={last}"


def _init(seed: int, runs: int, long_runs: int) -> None:
    _MATS.update(tuning_mats(seed, runs, long_runs, freqs=(1, 2, 4)))


def _score(setting: tuple) -> dict:
    wander, lags, last = setting
    spec = spec_of(wander, lags, last)
    return {"wander": wander, "lags": lags, "last": last, "spec": spec, **score(spec, _MATS)}


def shortfalls(row: dict) -> dict[str, float]:
    out = {}
    for mode in MODES:
        lg = row[mode]["long"]
        out[f"{mode}.rising"] = max(0.0, lg["rising"]["tenant_harmful"] - RISING)
        out[f"{mode}.dip"] = max(0.0, lg["dip"]["tenant_harmful"] - DIPS)
        for part in ("long", "short"):
            d = row[mode][part]["collapse"]["delay_evals_median"]
            out[f"{mode}.{part}.collapse_delay"] = (1.0 if d is None
                                                    else max(0.0, (d - DELAY_EVALS) / 10))
            out[f"{mode}.{part}.dead"] = max(0.0, DEAD_STOPPED
                                             - row[mode][part]["dead"]["stopped"])
    return out


def choose(rows: list[dict]) -> tuple[dict, str]:
    """The pick among scored ``rows`` by the rule above, and a line saying how."""
    passing = [r for r in rows if sum(shortfalls(r).values()) == 0.0]
    if passing:
        pick = max(passing, key=lambda r: (caught(r), -rising(r), -r["last"], -r["wander"],
                                           -r["lags"]))
        return pick, f"{len(passing)} of {len(rows)} settings meet every target"
    pick = min(rows, key=lambda r: (sum(shortfalls(r).values()), -caught(r)))
    return pick, f"none of {len(rows)} settings meets every target: smallest summed shortfall"


def caught(row: dict) -> float:
    return sum(row[m]["rule21"]["by_freq"]["1"]["caught"] for m in MODES) / len(MODES)


def rising(row: dict) -> float:
    return sum(row[m]["long"]["rising"]["tenant_harmful"] for m in MODES) / len(MODES)


def line(row: dict) -> str:
    return progress_line(row, f"wander={row['wander']} lags={row['lags']} last={row['last']}")


def main(argv=None):
    ap = tuning_args(__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--figures", default="docs/figures/issue46",
                    help="where the pages' copy of the plot goes ('' for none)")
    ap.add_argument("--plot-only", action="store_true",
                    help="rewrite the markdown and redraw the plot from the stored "
                         "wandering_tune.json")
    args, out = parse(ap, argv)
    if args.plot_only:
        result = json.loads((out / "wandering_tune.json").read_text())
        (out / "wandering_tune.md").write_text(markdown(result))
        draw(result, out, args.figures)
        return
    t0 = time.perf_counter()
    settings = list(itertools.product(WANDERS, LAGS, LASTS))
    rows = []
    with ProcessPoolExecutor(args.workers, initializer=_init,
                             initargs=(args.seed, args.runs, args.long_runs)) as ex:
        for row in ex.map(_score, settings):
            row["shortfalls"] = shortfalls(row)
            row["shortfall"] = sum(row["shortfalls"].values())
            rows.append(row)
            print(f"{time.perf_counter() - t0:6.0f}s {len(rows)}/{len(settings)} {line(row)}",
                  flush=True)
    pick, verdict = choose(rows)
    print(verdict, "\npick:", pick["spec"], flush=True)
    result = {"seed": args.seed, "runs": args.runs, "long_runs": args.long_runs,
              "progress": "each eval's (j + 1) / evals", "default": DEFAULT_SPEC,
              "plong": PLONG, "rows": rows, "verdict": verdict, "pick": pick["spec"],
              "pick_setting": {k: pick[k] for k in ("wander", "lags", "last")},
              "wall_s": round(time.perf_counter() - t0, 1)}
    (out / "wandering_tune.json").write_text(json.dumps(result, indent=1))
    (out / "wandering_tune.md").write_text(markdown(result))
    draw(result, out, args.figures)


def markdown(result: dict) -> str:
    lines = [f"Tuning material only (seed {result['seed']}, {result['runs']} runs per "
             f"failshape cell, {result['long_runs']} per issue-21 long cell); every rule is "
             f"told each eval's progress and has `plong={result['plong']}`.", "",
             f"Default: `{result['default']}`", "",
             f"{result['verdict']}; pick `{result['pick']}`", "", "```"]
    lines += [line(r) + f" | shortfall {r['shortfall']:.3f}" for r in result["rows"]]
    return "\n".join(lines + ["```", ""])


def draw(result: dict, out: Path, figures: str) -> None:
    plot(result, out / "wandering_tune.png")
    if figures:
        Path(figures).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "wandering_tune.png", Path(figures) / "wandering_tune.png")


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, pick = result["rows"], result["pick"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, mode in zip(axes, MODES):
        for lags, marker in zip(LAGS, ("o", "s")):
            for wander, colour in zip(WANDERS, ("C0", "C1", "C2", "C3")):
                pts = sorted((r for r in rows if r["lags"] == lags and r["wander"] == wander),
                             key=lambda r: r["last"])
                ax.plot([r[mode]["rule21"]["by_freq"]["1"]["caught"] for r in pts],
                        [100 * r[mode]["long"]["rising"]["tenant_harmful"] for r in pts],
                        marker=marker, color=colour, ls="-" if lags == 4 else ":",
                        label=f"wander={wander:g}, lags={lags}")
        for r, style, name in ((rows[0], "k*", "plong=50 alone"),
                               (next(r for r in rows if r["spec"] == pick), "r*", "the pick")):
            ax.plot([r[mode]["rule21"]["by_freq"]["1"]["caught"]],
                    [100 * r[mode]["long"]["rising"]["tenant_harmful"]], style, ms=14,
                    label=name)
        ax.axhline(100 * RISING, color="red", lw=1)
        ax.set_xlabel("issue 21's long hacking runs caught (tuning, 1x)")
        ax.set_title(f"noise {mode}; each line: last = 0, 0.2, 0.3 (right to left)",
                     fontsize=9)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("still-rising runs stopped with loss > 5% of gain (%)\n"
                       "(red: issue 46's target, 1%)")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle("With progress (plong=50): what each wander setting costs in catches "
                 "(tuning material)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
