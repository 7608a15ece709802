#!/usr/bin/env bash
# Install what the integration tests need (tests/test_integration_*.py, tests/test_watch*.py).
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build; with torch
# already satisfied, the extras' "torch>=2.1" adds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --disable-pip-version-check -q torch==2.13.0
python -m pip install --disable-pip-version-check -q -e '.[test,hf,ray,watch]'
python - <<'PY'
import importlib.metadata as md
for name in ("torch", "transformers", "trl", "datasets", "accelerate", "ray", "tensorboard"):
    print(f"{name} {md.version(name)}")
PY
