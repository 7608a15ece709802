"""A tiny GRPO run that over-optimises its reward model, stopped by the `default` rule at
its best checkpoint, in about 20 CPU seconds.

    python examples/grpo_stop.py OUT_DIR

The run is the lab's (docs/lab.md) under TRL's ``GRPOTrainer``: a 1-layer GPT-2 and a
word-level tokenizer built in code (nothing downloaded), first fitted to a small world's
reference samples, then trained by GRPO against a proxy reward model fitted on 100
preference pairs. The proxy is what GRPO maximises; the world's gold reward on held-out
eval prompts is logged beside it (weight 0, never optimised) and is what the stop rule
reads. The gold score rises, then falls while the proxy keeps rising; `EvalStopCallback`
with ``detector="default"`` stops training and names the best checkpoint.

It prints one line per eval (step, held-out gold score, proxy reward), then the stop.
TRL's own log goes to ``OUT_DIR/train.log``. Needs ``evalstop[hf]``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evalstop.lab.trl_run import run_trl

    with open(os.path.join(out, "train.log"), "w") as log, \
            contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_trl(pairs=100, beta=0.0, seed=0, out_dir=out, max_steps=60, eval_every=4,
                      detector="default")
    print(f"{'step':>4}  {'held-out gold':>13}  {'proxy reward':>12}")
    for e in res.evals:
        mark = ("  <- best" if e["step"] == res.best_step else
                "  <- stop" if e["step"] == res.stop_step else "")
        print(f"{e['step']:>4}  {e['gold']:>13.3f}  {e['proxy']:>12.3f}{mark}")
    if not res.stopped:
        print(f"not stopped: ran all {res.global_step} steps")
        return 0
    print(f"stopped by default at step {res.stop_step} of 60: {res.reason}")
    print(f"best checkpoint: {res.best_checkpoint}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
