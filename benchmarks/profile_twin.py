"""Where the planned loop's compiled twin spends its time, by compiled function (perf).

numba's JIT code has no symbols that perf can read, so this compiles the twin into a fresh
numba cache directory (a cached load keeps no code listing), writes ``/tmp/perf-PID.map``
with the address of every compiled function of the twin and of the default rule's plan,
then runs one simulation over and over under ``perf record -p PID`` and prints perf's
report by symbol. Steps inlined into a function (``_step``) count as that function.

    python benchmarks/profile_twin.py --scheduler tiresias --detector default --seconds 10
    python benchmarks/profile_twin.py --scheduler loss-aware --scale 8   # 8x Philly, 8x GPUs

Needs Linux ``perf`` (Debian: ``apt-get install linux-perf``) and the ``fast`` extra. The
first part compiles the twin (10-30 CPU-s) into a temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def main() -> int:
    # (a sibling script, on sys.path as this one runs; it does not import numba, which
    # must first see the fresh cache directory set below)
    from bench_sim import add_scale_arg, check_scale

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", default="srtf-est")
    ap.add_argument("--detector", default="evalstop:k=2")
    ap.add_argument("--gpus", type=int, default=512, help="GPUs at 1x (default 512)")
    add_scale_arg(ap)
    ap.add_argument("--seconds", type=float, default=10.0, help="time sampled (default 10)")
    ap.add_argument("--top", type=int, default=25, help="symbols printed (default 25)")
    args = ap.parse_args()
    check_scale(ap, args)
    perf = shutil.which("perf")
    if perf is None:
        print("profile_twin: perf not found (Debian: apt-get install linux-perf)",
              file=sys.stderr)
        return 2
    cache = tempfile.mkdtemp(prefix="evalstop-numba-")
    os.environ["NUMBA_CACHE_DIR"] = cache  # before numba is imported: compile afresh
    os.environ["EVALSTOP_JIT"] = "1"
    try:
        return _profile(perf, args)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _profile(perf: str, args) -> int:
    import numpy as np
    from bench_sim import repeated  # (this script's folder is on sys.path)

    from evalstop.schedulers import build
    from evalstop.sim.engine import simulate
    from evalstop.workload import load_philly, trace_workload

    work = trace_workload(repeated(load_philly(), args.scale), np.random.default_rng(0))
    n_gpus = args.gpus * args.scale

    def once():
        simulate(work, n_gpus, build(args.scheduler, args.detector), record_timeline=False)

    print("compiling the twin into a fresh cache ...", file=sys.stderr, flush=True)
    once()
    n = _write_map()
    print(f"{n} compiled functions mapped; sampling {args.seconds:g} s", file=sys.stderr)
    out = os.path.join(tempfile.gettempdir(), f"evalstop-perf-{os.getpid()}.data")
    rec = subprocess.Popen([perf, "record", "-F", "2000", "-o", out, "-p", str(os.getpid())],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # (perf attaching)
    t0 = time.monotonic()
    while time.monotonic() - t0 < args.seconds:
        once()
    rec.send_signal(signal.SIGINT)  # perf writes its data and exits
    rec.wait()
    report = subprocess.run([perf, "report", "-i", out, "--no-children", "--sort", "sym"],
                            capture_output=True, text=True)
    os.unlink(out)
    rows = [r for r in report.stdout.splitlines() if "%" in r and not r.startswith("#")]
    print("\n".join(rows[: args.top]))
    return 0


def _write_map() -> int:
    """``/tmp/perf-PID.map``: each compiled function's start and size (up to the next
    one), named ``module.function``."""
    import importlib

    from numba.core.registry import CPUDispatcher

    names = ("evalstop.sim.planned_jit", "evalstop.sim.numba_victims",
             "evalstop.sim.numba_arrays", "evalstop.detectors.cusum_drop_jit",
             "evalstop.detectors.block_cusum_jit")
    starts = {}
    for name in names:
        module = importlib.import_module(name)
        for fn, disp in vars(module).items():
            if not isinstance(disp, CPUDispatcher):
                continue
            for cres in disp.overloads.values():
                final = cres.library._final_module  # (None when loaded from a cache)
                for f in [] if final is None else final.functions:
                    # (numba's mangled name holds the function's as <length><name>B)
                    if not f.is_declaration and f"{len(fn)}{fn}B" in f.name:
                        addr = cres.library.get_pointer_to_function(f.name)
                        if addr:
                            starts[addr] = f"{name.rsplit('.', 1)[1]}.{fn}"
    addrs = sorted(starts)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for k, addr in enumerate(addrs):
            end = addrs[k + 1] if k + 1 < len(addrs) else addr + 65536
            fh.write(f"{addr:x} {min(end - addr, 1 << 20):x} {starts[addr]}\n")
    return len(addrs)


if __name__ == "__main__":
    sys.exit(main())
