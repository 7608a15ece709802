"""This tree as a user gets it from ``pip install .``: a wheel built from a copy of the tree
(the build leaves nothing in the checkout), offline (``--no-build-isolation``), installed
without dependencies into a virtual environment that sees the system's packages (no
network; evalstop itself comes from the wheel, whose site-packages precede the system's).
The conftest fixture ``wheel_venv`` builds it once a session for every test that needs it:
a build and an install cost seconds of CI time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class WheelVenv:
    wheel: Path
    venv: Path

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def build(out: Path) -> WheelVenv:
    """The wheel under ``out/dist`` and the venv ``out/venv``. Tests must not change the
    venv: others use it after them."""
    tree = out / "tree"
    shutil.copytree(ROOT / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out / "dist"), str(tree)], env=env, check=True,
                   capture_output=True, timeout=300)
    (wheel,) = (out / "dist").glob("evalstop-*.whl")
    venv = out / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, capture_output=True, timeout=120)
    # --force-reinstall: an editable evalstop in the system site-packages (the test
    # command's own install) would otherwise satisfy pip, and the wheel never land.
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index",
                    "--force-reinstall", str(wheel)], env=env, check=True,
                   capture_output=True, timeout=300)
    return WheelVenv(wheel, venv)
