"""The benchmark's and the report's modules import first in a fresh interpreter: the two
packages import each other (the benchmark draws through the report's plotting), and a
cycle between them shows only when a process starts from the benchmark's side, as a Ray
worker or `evalstop bench-detectors` does."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import evalstop.detbench
import evalstop.report


def _modules() -> list[str]:
    return [m.name for pkg in (evalstop.detbench, evalstop.report)
            for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]


def test_each_module_imports_first_in_a_fresh_process():
    code = ("import subprocess, sys\n"
            f"for m in {_modules()!r}:\n"
            "    r = subprocess.run([sys.executable, '-c', 'import ' + m],\n"
            "                       capture_output=True, text=True)\n"
            "    if r.returncode:\n"
            "        print(m + ': ' + (r.stderr.strip().splitlines() or ['?'])[-1])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", r.stdout
