"""``evalstop`` command line. Each subcommand is a module in this package with
``add_parser(subparsers)`` and ``run(args) -> int``; add new ones to ``COMMANDS``.

Errors in user input end in one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys

from evalstop import __version__
from evalstop.suggest import closest, did_you_mean

# (subcommand, module under evalstop.cli); modules are imported only when listed here.
COMMANDS = (
    ("reproduce", "reproduce"),
    ("simulate", "simulate"),
    ("replay", "replay"),
    ("noise", "noise"),
    ("bench-detectors", "bench_detectors"),
    ("watch", "watch"),
    ("lab", "lab"),
    ("testbed", "testbed"),
    ("action", "action"),
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that cleanup runs: temporary files and folders are
    removed and worker processes killed (the default action would just end the process)."""


def _terminated(signum, frame):
    raise Terminated()


class _Parser(argparse.ArgumentParser):
    """Usage mistakes end in one line too, like every other input error, with the nearest
    option or choice when one is close ("did you mean")."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}{self._hint(message)} (see --help)\n")

    def _hint(self, message: str) -> str:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            return did_you_mean(choice.group(1), re.findall(r"'([^']*)'", choice.group(2)))
        extra = re.match(r"unrecognized arguments: (.*)", message)
        if not extra:
            return ""
        options = self._options_of(getattr(self, "_given", []))
        for word in extra.group(1).split():
            if word.startswith("--"):
                hit = closest(word.split("=", 1)[0], options)
                if hit is not None:
                    return f" (did you mean {hit}?)"
        return ""

    def _options_of(self, given: list[str]) -> list[str]:
        """The option strings of the (sub)command that ``given`` names: the unrecognized
        ones surface at the top parser, whose own options are not the ones meant."""
        parser = self
        for word in given:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if subs and word in subs[0].choices:
                parser = subs[0].choices[word]
        return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only`` (a known subcommand) just that subcommand's module is
    imported, so ``evalstop replay`` does not pay for the plotting stack."""
    parser = _Parser(
        prog="evalstop",
        description="Stop reward-hacked RLHF jobs from their eval scores; simulate what it saves.",
    )
    parser.add_argument("--version", action="version", version=f"evalstop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)
    for name, module in COMMANDS:
        if only is not None and name != only:
            continue
        mod = importlib.import_module(f"evalstop.cli.{module}")
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    names = {name for name, _ in COMMANDS}
    parser = build_parser(argv[0] if argv and argv[0] in names else None)
    args = parser.parse_args(argv)
    # watch keeps the default: its state transitions are its own business on every signal.
    old_term = _on_sigterm(_terminated) if args.command != "watch" else None
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt as exc:
        print("evalstop: " + ("terminated" if isinstance(exc, Terminated) else "interrupted"),
              file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    except BrokenPipeError:
        # The reader went away (`evalstop replay log | head`): not an error. Caught before
        # OSError, its base class; stdout goes to devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, OSError) as exc:  # InputError is a ValueError
        print(f"evalstop: error: {_message(exc)}", file=sys.stderr)
        return 2
    finally:
        _on_sigterm(old_term)


def _on_sigterm(handler):
    """Install ``handler`` for SIGTERM, returning the old one (None off the main thread,
    where Python cannot set handlers, e.g. main() called from a test's thread)."""
    if handler is None:
        return None
    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:
        return None


def _message(exc: Exception) -> str:
    """One line naming the problem. An OSError reads as "PATH: reason", not as
    "[Errno 21] Is a directory: 'PATH'" (mkdir, open and friends name the path)."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror}"
    text = str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
