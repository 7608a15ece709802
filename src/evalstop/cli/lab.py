"""``evalstop lab``: the CPU-scale RLHF lab that produces labelled reward-hacking curves.

``evalstop lab run --pairs N --beta B --seed S --out DIR`` runs one experiment;
``evalstop lab corpus --out DIR`` runs a grid of them (resumable) and packs the corpus.
Needs torch (``pip install 'evalstop[lab]'``); torch is imported only inside ``run``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from evalstop.fileio import prepare_out_dir
from evalstop.progress import stage

MAX_SEEDS = 10_000

def add_parser(sub) -> argparse.ArgumentParser:
    from evalstop.lab.config import EVAL_SETS
    from evalstop.lab.generate import BETAS, DEFAULT_WORKERS, N_SEEDS, PAIRS
    from evalstop.lab.worlds import DEFAULT_WORLD, WORLDS

    world_help = (f"which lab world: {', '.join(WORLDS)} (default {DEFAULT_WORLD}; "
                  "trigram: the held-out second world, a trigram language, gold = fluency + "
                  "variety, a linear proxy)")

    p = sub.add_parser(
        "lab",
        help="toy RLHF runs on the CPU that over-optimize a proxy reward (needs torch)",
        description=(
            "A toy RLHF setup after Gao, Schulman & Hilton (2023): a gold reward labels "
            "preference pairs, a small proxy reward model is fitted on a limited number of "
            "them, a tiny transformer policy is optimized against the proxy with GRPO-style "
            "REINFORCE, and the gold score of fresh samples is the eval. Writes eval logs "
            "(JSONL), labels and metadata."
        ),
    )
    lab_sub = p.add_subparsers(dest="lab_command", metavar="{run,corpus}", required=True,
                               parser_class=type(p))

    r = lab_sub.add_parser("run", help="one run end to end")
    r.add_argument("--pairs", type=int, required=True, metavar="N",
                   help="gold-labelled preference pairs for the proxy reward model")
    r.add_argument("--beta", type=float, required=True, metavar="B",
                   help="KL penalty to the initial policy (0 = none)")
    r.add_argument("--seed", type=int, required=True, metavar="S", help="seed (>= 0)")
    r.add_argument("--world", default=DEFAULT_WORLD, metavar="NAME", help=world_help)
    r.add_argument("--steps", type=int, default=None, metavar="N",
                   help="RL steps (default 250; trigram world 150)")
    r.add_argument("--eval-every", type=int, default=None, metavar="E",
                   help="evaluate every E steps (default 10; trigram world 6; steps must be "
                        "a multiple)")
    eval_set_help = ("fresh or fixed. fresh: new prompts and samples at every eval (default); fixed: one set "
                     "scored again at every eval, like a fixed benchmark, so eval errors are "
                     "correlated across checkpoints")
    r.add_argument("--eval-set", choices=EVAL_SETS, default=None, metavar="SET",
                   help=eval_set_help)
    r.add_argument("--out", required=True, metavar="DIR",
                   help="folder for ID.jsonl (eval log), ID.label.json, ID.meta.json")

    c = lab_sub.add_parser("corpus", help="a grid of runs over pairs, beta and seeds; resumable")
    c.add_argument("--out", default="lab_runs", metavar="DIR",
                   help="folder for the runs' files (default lab_runs); complete runs "
                        "already there are skipped")
    c.add_argument("--pack-dir", default=None, metavar="DIR",
                   help="where to write lab_corpus.jsonl.gz, lab_labels.csv and "
                        "lab_corpus.json (default: --out)")
    c.add_argument("--world", default=DEFAULT_WORLD, metavar="NAME", help=world_help)
    c.add_argument("--workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                   help=f"worker processes, one run each (default {DEFAULT_WORKERS})")
    tri = WORLDS["trigram"]
    c.add_argument("--pairs", default=None, metavar="N[,N]",
                   help=f"pair counts (default {','.join(map(str, PAIRS))}; trigram world "
                        f"{','.join(map(str, tri.pairs))})")
    c.add_argument("--betas", default=None, metavar="B[,B]",
                   help=f"KL penalties (default {','.join(f'{b:g}' for b in BETAS)}; trigram "
                        f"world {','.join(f'{b:g}' for b in tri.betas)})")
    c.add_argument("--seeds", type=int, default=None, metavar="N",
                   help=f"seeds 0..N-1 per (pairs, beta) (default {N_SEEDS}; trigram world "
                        f"{tri.n_seeds})")
    c.add_argument("--steps", type=int, default=None, metavar="N",
                   help="RL steps per run (default 250; trigram world 150)")
    c.add_argument("--eval-every", type=int, default=None, metavar="E",
                   help="evaluate every E steps (default 10; trigram world 6)")
    c.add_argument("--eval-set", choices=EVAL_SETS, default=None, metavar="SET",
                   help=eval_set_help)
    c.add_argument("--dense", action="store_true",
                   help="the world's dense-eval corpus instead (an eval at every step on a "
                        "fixed eval set, 151-501 evals a run; its own grid and files "
                        "lab_dense_* / lab2_dense_*); no grid options with it")
    c.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (elsewhere)")
    return p


def _ints(option: str, text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} must be comma-separated integers, got {text!r}") from None


def _floats(option: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} must be comma-separated numbers, got {text!r}") from None


def _overrides(args) -> dict:
    out = {}
    if getattr(args, "steps", None) is not None:
        out["steps"] = args.steps
    if getattr(args, "eval_every", None) is not None:
        out["eval_every"] = args.eval_every
    if getattr(args, "eval_set", None) is not None:
        out["eval_set"] = args.eval_set
    return out


def run(args) -> int:
    try:
        if args.lab_command == "run":
            return _run_one(args)
        return _run_corpus(args)
    except ImportError as exc:  # torch missing: one line naming the extra, like bad input
        print(f"evalstop: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2


def _run_one(args) -> int:

    from evalstop.lab.config import RunConfig

    # Build (and so check) the config before importing torch or touching the disk.
    cfg = RunConfig.for_world(args.world, pairs=args.pairs, beta=args.beta, seed=args.seed,
                              **_overrides(args))
    out = prepare_out_dir(args.out)
    from evalstop.lab.output import paths, write_run
    from evalstop.lab.run import run_lab

    res = run_lab(cfg)
    label = write_run(out, cfg.run_id, res.records, res.meta)
    p = paths(out, cfg.run_id)
    verdict = "hacking" if label.hacking else "healthy"
    print(f"{cfg.run_id}: {verdict} (gold {label.start:.3f} -> peak {label.peak:.3f} at step "
          f"{label.peak_step} -> end {label.end:.3f}); {res.meta['wall_s']:.1f} s; "
          f"log {p['log']}")
    return 0


def _run_corpus(args) -> int:

    from evalstop.lab.generate import generate, grid, pack
    from evalstop.lab.worlds import world_spec

    spec = world_spec(args.world)
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if args.dense:
        return _run_dense(args)
    if args.pairs is None:
        args.pairs = ",".join(map(str, spec.pairs))
    if args.betas is None:
        args.betas = ",".join(f"{b:g}" for b in spec.betas)
    if args.seeds is None:
        args.seeds = spec.n_seeds
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if args.seeds > MAX_SEEDS:  # the grid is built up front: 99999999999 was a MemoryError
        raise ValueError(f"--seeds must be <= {MAX_SEEDS}, got {args.seeds}")
    pairs, betas = _ints("--pairs", args.pairs), _floats("--betas", args.betas)
    configs = grid(pairs, betas, range(args.seeds), world=args.world,
                   **_overrides(args))  # checks every value
    # Both folders made now: a file in the --pack-dir's place used to fail after every run.
    pack_dir = prepare_out_dir(args.pack_dir, "--pack-dir") if args.pack_dir is not None else None
    out = prepare_out_dir(args.out)
    pack_dir = pack_dir or out
    command = " ".join(shlex.quote(x) for x in
                       ["evalstop", "lab", "corpus"]
                       + (["--world", args.world] if args.world != "bigram" else [])
                       + ["--out", args.out, "--pack-dir",
                        str(pack_dir), "--pairs", args.pairs, "--betas", args.betas,
                        "--seeds", str(args.seeds), "--workers", str(args.workers)]
                       + (["--steps", str(args.steps)] if args.steps is not None else [])
                       + (["--eval-every", str(args.eval_every)]
                          if args.eval_every is not None else [])
                       + (["--eval-set", args.eval_set] if args.eval_set is not None else []))
    t0 = time.perf_counter()
    done = generate(configs, out, workers=args.workers, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    with stage("lab corpus: packing the runs", enabled=not args.no_progress):
        summary = pack(configs, out, pack_dir, command=command,
                       grid_info={"pairs": pairs, "betas": betas, "seeds": args.seeds,
                                  "overrides": _overrides(args),
                                  "generate_wall_s": round(wall, 1), "workers": args.workers})
    print(f"{done['ran']} run(s) done, {done['skipped']} already complete; {wall:.0f} s wall. "
          f"{summary['n_runs']} runs, {summary['n_hacking']} hacking "
          f"({100 * summary['hacking_rate']:.0f}%). Packed into {pack_dir}.")
    return 0


def _run_dense(args) -> int:
    from evalstop.lab.dense import dense_grid, dense_spec, provenance
    from evalstop.lab.generate import generate, pack

    given = [opt for opt, v in (("--pairs", args.pairs), ("--betas", args.betas),
                                ("--seeds", args.seeds), ("--steps", args.steps),
                                ("--eval-every", args.eval_every), ("--eval-set", args.eval_set))
             if v is not None]
    if given:
        raise ValueError(f"--dense has its own grid; drop {', '.join(given)}")
    spec = dense_spec(args.world)
    configs = dense_grid(args.world)
    pack_dir = prepare_out_dir(args.pack_dir, "--pack-dir") if args.pack_dir is not None else None
    out = prepare_out_dir(args.out)
    pack_dir = pack_dir or out
    command = " ".join(shlex.quote(x) for x in
                       ["evalstop", "lab", "corpus", "--dense", "--world", args.world,
                        "--out", args.out, "--pack-dir", str(pack_dir),
                        "--workers", str(args.workers)])
    t0 = time.perf_counter()
    done = generate(configs, out, workers=args.workers, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    summary = pack(configs, out, pack_dir, command=command, files=spec.files(),
                   grid_info={"blocks": [b.to_dict() for b in spec.blocks],
                              "eval_every": spec.eval_every, "eval_set": "fixed",
                              "generate_wall_s": round(wall, 1), "workers": args.workers},
                   extra={"provenance": provenance(spec)})
    print(f"{done['ran']} run(s) done, {done['skipped']} already complete; {wall:.0f} s wall. "
          f"{summary['n_runs']} runs, {summary['n_hacking']} hacking "
          f"({100 * summary['hacking_rate']:.0f}%). Packed into {pack_dir}.")
    return 0
