"""``evalstop`` command line. Each subcommand is a module in this package with
``add_parser(subparsers)`` and ``run(args) -> int``; add new ones to ``COMMANDS``.

Errors in user input end in one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from evalstop import __version__

# (subcommand, module under evalstop.cli); modules are imported only when listed here.
COMMANDS = (
    ("reproduce", "reproduce"),
    ("simulate", "simulate"),
    ("replay", "replay"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalstop",
        description="Stop reward-hacked RLHF jobs from their eval scores; simulate what it saves.",
    )
    parser.add_argument("--version", action="version", version=f"evalstop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for _name, module in COMMANDS:
        mod = importlib.import_module(f"evalstop.cli.{module}")
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("evalstop: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:  # InputError is a ValueError
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"evalstop: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
