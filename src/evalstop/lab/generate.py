"""A corpus: a grid of runs over (pairs, beta, seed), run in parallel processes,
resumable, then packed into the three shipped files (``evalstop.lab.corpus``).

Resumable: a run whose files are complete (``output.is_complete``) is skipped, and each
run's files are written atomically, so killing a corpus half-way loses at most the runs in
flight. The packed files are deterministic for given runs (gzip without a timestamp, runs
in grid order), except the wall times recorded in the metadata.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

from evalstop.fileio import atomic_write
from evalstop.lab import labels as label_rule
from evalstop.lab.config import RunConfig
from evalstop.lab.corpus import corpus_files, write_labels
from evalstop.lab.output import is_complete, paths, read_run_label
from evalstop.lab.worlds import DEFAULT_WORLD, WORLDS, world_spec
from evalstop.parallel import check_workers, parallel_map

# The first world's shipped grid (docs/lab.md: how it was calibrated). Few
# pairs and no KL penalty hack; many pairs or a strong penalty stay healthy; the middle is
# mixed. Each world's grid is in ``evalstop.lab.worlds``.
PAIRS = WORLDS[DEFAULT_WORLD].pairs
BETAS = WORLDS[DEFAULT_WORLD].betas
N_SEEDS = WORLDS[DEFAULT_WORLD].n_seeds
DEFAULT_WORKERS = 2
COMMAND = WORLDS[DEFAULT_WORLD].command


def grid(pairs=None, betas=None, seeds=None, *, world: str = DEFAULT_WORLD,
         **overrides) -> list[RunConfig]:
    """Configs in grid order (pairs, then beta, then seed); the world's own grid where
    an axis is None; ``overrides`` set the other RunConfig fields (e.g. ``steps``) for
    every run, over the world's own settings."""
    spec = world_spec(world)
    pairs = spec.pairs if pairs is None else pairs
    betas = spec.betas if betas is None else betas
    seeds = range(spec.n_seeds) if seeds is None else seeds
    return [RunConfig.for_world(world, pairs=p, beta=float(b), seed=s, **overrides)
            for p, b, s in itertools.product(pairs, betas, seeds)]


def _run_one(job: tuple[dict, str]) -> tuple[str, float]:
    cfg_dict, out_dir = job
    from evalstop.lab.output import write_run
    from evalstop.lab.run import run_lab

    cfg = RunConfig.from_dict(cfg_dict)
    res = run_lab(cfg)
    write_run(out_dir, cfg.run_id, res.records, res.meta)
    return cfg.run_id, res.meta["wall_s"]


def generate(configs: list[RunConfig], run_dir: str | Path, *, workers: int = DEFAULT_WORKERS,
             progress: bool = True) -> dict:
    """Run every config not already complete in ``run_dir``; returns counts and times."""
    check_workers(workers)
    ids = [c.run_id for c in configs]
    if len(set(ids)) != len(ids):
        raise ValueError("the grid names one run twice")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    todo = [c for c in configs if not is_complete(run_dir, c.run_id)]
    done = parallel_map(_run_one, [(c.to_dict(), str(run_dir)) for c in todo],
                        workers=workers, progress=progress, desc="lab runs", unit="run",
                        done_before=len(configs) - len(todo))
    walls = [wall for _, wall in done]
    return {"runs": len(configs), "skipped": len(configs) - len(todo), "ran": len(todo),
            "run_wall_s": sum(walls)}


def pack(configs: list[RunConfig], run_dir: str | Path, pack_dir: str | Path, *,
         command: str | None = None, grid_info: dict | None = None,
         files: tuple[str, str, str] | None = None, extra: dict | None = None) -> dict:
    """Pack complete runs (all of one world) into that world's corpus files in
    ``pack_dir`` (or the ``(corpus, labels, metadata)`` names ``files``); returns a
    summary. ``command`` defaults to the world's own; ``extra`` adds top-level keys to the
    metadata (e.g. the dense corpora's provenance)."""
    worlds = {c.world for c in configs} or {DEFAULT_WORLD}
    if len(worlds) > 1:
        raise ValueError(f"one corpus holds one world, got {sorted(worlds)}")
    world = worlds.pop()
    corpus_file, labels_file, meta_file = corpus_files(world) if files is None else files
    command = world_spec(world).command if command is None else command
    run_dir, pack_dir = Path(run_dir), Path(pack_dir)
    missing = [c.run_id for c in configs if not is_complete(run_dir, c.run_id)]
    if missing:
        raise ValueError(f"{len(missing)} run(s) are not complete in {run_dir}, e.g. {missing[0]}")
    pack_dir.mkdir(parents=True, exist_ok=True)
    labels, metas = {}, {}
    # mtime=0 and no file name: the same runs pack to the same bytes.
    with atomic_write(pack_dir / corpus_file, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for c in configs:
            gz.write(paths(run_dir, c.run_id)["log"].read_bytes())
            labels[c.run_id] = read_run_label(run_dir, c.run_id)
            metas[c.run_id] = _round(json.loads(paths(run_dir, c.run_id)["meta"].read_text()))
    write_labels(pack_dir / labels_file, labels)
    n_hack = sum(lab.hacking for lab in labels.values())
    summary = {
        "n_runs": len(configs),
        "n_hacking": n_hack,
        "hacking_rate": n_hack / len(configs) if configs else float("nan"),
        "total_run_wall_s": round(sum(m["wall_s"] for m in metas.values()), 1),
    }
    doc = {
        "description": "EvalStop lab corpus: toy RLHF runs over-optimizing a proxy reward "
                       "(evalstop.lab); eval = gold reward of fresh samples.",
        **({} if world == DEFAULT_WORLD else {"world": world}),
        "command": command,
        "label_rule": label_rule.RULE,
        "grid": grid_info or {},
        **(extra or {}),
        "summary": summary,
        "runs": metas,
    }
    with atomic_write(pack_dir / meta_file) as fh:
        json.dump(doc, fh, indent=1)
    return summary


def _round(obj, digits: int = 6):
    if isinstance(obj, float):
        return round(obj, digits)
    if isinstance(obj, dict):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v, digits) for v in obj]
    return obj
