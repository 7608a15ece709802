"""docs/reference/cli.md is the CLI's own --help, kept current by scripts/cli_reference.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from evalstop.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cli_reference.py"
PAGE = ROOT / "docs" / "reference" / "cli.md"


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(page: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(page)],
                          capture_output=True, text=True, timeout=120)


def test_committed_page_is_current(ref):
    why = ref.stale(PAGE.read_text(encoding="utf-8") if PAGE.exists() else None, ref.render())
    assert why is None, f"{PAGE} {why}: run python scripts/cli_reference.py"


def test_every_command_has_a_section(ref):
    found = [" ".join(path) for path, _ in ref.commands(build_parser())]
    top = [name for name, _ in COMMANDS]
    assert found[0] == "" and [f for f in found if " " not in f and f] == top
    assert {"lab run", "lab corpus"} <= set(found)  # nested subcommands are walked too
    page = ref.render()
    for words in found:
        assert f"`{' '.join(['evalstop', *words.split()])}`" in page


def test_same_text_whatever_the_terminal(ref, monkeypatch):
    first = ref.render()
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ref.render() == first


def test_check_passes_a_fresh_page_and_catches_a_stale_one(ref, tmp_path, capsys):
    page = tmp_path / "cli.md"
    assert ref.main(["--check", "--out", str(page)]) == 1  # missing
    assert ref.main(["--out", str(page)]) == 0
    assert ref.main(["--check", "--out", str(page)]) == 0
    capsys.readouterr()
    # An option dropped from the page: what a page looks like after a new option is added.
    page.write_text(ref.render().replace("--no-detectors", "--no-detector"), encoding="utf-8")
    res = check(page)  # as a script, the way CI or a person runs it
    assert res.returncode == 1 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "python scripts/cli_reference.py" in lines[0]
    assert "(in `evalstop reproduce`)" in lines[0]  # names the command to look at


def test_other_python_layout_is_compared_by_content(ref):
    page = ref.render()
    here = "%d.%d" % sys.version_info[:2]
    # Another argparse layout: same options, wrapped elsewhere (3.13 writes `-o, --out DIR`).
    other = page.replace(f"on Python {here};", "on Python 9.99;").replace(
        "  --out DIR           output folder", "  --out DIR\n      output folder")
    assert other != page and ref.stale(other, page) is None
    why = ref.stale(other.replace("--quick", "--fast"), page)
    assert "other commands or options" in why and "(in `evalstop reproduce`;" in why
    assert (ref.stale(page.replace("--quick", "--fast"), page)
            == "differs from the CLI's --help (in `evalstop reproduce`)")
