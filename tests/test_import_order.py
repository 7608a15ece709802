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

# One interpreter forks a child per module: each child imports its module with no module of
# evalstop loaded yet, as a fresh process does. Only the third-party packages those modules
# import (numpy, scipy, matplotlib: most of a fresh import's seconds) are loaded before the
# forks, found by a first child that imports them all; a third-party package cannot take
# part in a cycle between evalstop's modules. The parent checks that it holds no evalstop
# module at each fork.
_FORK_EACH = """
import importlib, os, sys

def evalstop_loaded():
    return sorted(m for m in sys.modules if m == "evalstop" or m.startswith("evalstop."))

def child(body):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            text = body()
            code = 0
        except BaseException as exc:
            lines = str(exc).strip().splitlines()
            text, code = type(exc).__name__ + ": " + (lines[-1] if lines else ""), 1
        with os.fdopen(w, "wb") as fh:
            fh.write(text.encode())
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        text = fh.read().decode()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), text

def import_all():
    before = set(sys.modules)
    for m in modules:
        try:
            importlib.import_module(m)
        except BaseException:
            pass  # its own child below says why
    return "\\n".join(sorted(set(sys.modules) - before))

modules = MODULES
code, names = child(import_all)
assert code == 0, names
for name in names.splitlines():
    if name.split(".")[0] != "evalstop" and not name.startswith("__"):
        try:
            importlib.import_module(name)
        except Exception:
            pass  # not loadable on its own: the children import it themselves
for m in modules:
    assert not evalstop_loaded(), evalstop_loaded()
    code, text = child(lambda: importlib.import_module(m) and "")
    if code:
        print(m + ": " + (text or "exit %d" % code))
"""


def _modules() -> list[str]:
    return [m.name for pkg in (evalstop.detbench, evalstop.report)
            for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]


def test_each_module_imports_first_in_a_fresh_process():
    code = _FORK_EACH.replace("MODULES", repr(_modules()))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", r.stdout
