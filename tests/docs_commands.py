"""The shell blocks of README.md and docs/, and the markers that say how a test runs them.

A marker is an HTML comment on the line right before a block's fence (invisible on the
page and on GitHub):

- ``<!-- runnable -->``: the block runs as written;
- ``<!-- runnable as: COMMAND -->``: a long or installing block (a full ``reproduce``, a
  ``pip install``, a controller that runs until stopped) runs as COMMAND instead, a smaller
  variant of the same thing;
- ``<!-- not runnable: REASON -->``: the block is not run, for the reason given;
- ``<!-- ci: test command ... -->``: the README's test command, which CI itself runs.

In a block whose commands carry a ``$`` prompt, the lines without one are output and are
not run; in a runnable block that output is what its command must print, line for line
(``Block.transcript``). Every shell block of README.md must carry a marker; in docs/ only the blocks
marked runnable are run. ``python tests/docs_commands.py`` lists every block and its marker.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "shell", "console"}
# Pages whose blocks build on each other (a cluster started in one, used in the next): their
# runnable blocks run in page order, in one shell, by their own test, not one by one.
IN_SEQUENCE = {"docs/testbed.md": "tests/test_testbed_docs.py"}
_MARKER = re.compile(r"<!--\s*(runnable as:|runnable|not runnable:|ci: test command)(.*?)-->")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    text: str  # the block's lines, as written
    marker: str | None  # "runnable", "runnable as:", "not runnable:", "ci: test command"
    argument: str  # the command of "runnable as:", the reason of "not runnable:"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def script(self) -> str:
        """The shell script a reader would type: the command under ``runnable as:``,
        else the block's commands (the ``$`` lines where there are prompts)."""
        if self.marker == "runnable as:":
            return self.argument
        lines = self.text.splitlines()
        if any(line.startswith("$ ") for line in lines):
            out, more = [], False
            for line in lines:
                if line.startswith("$ ") or more:
                    out.append(line.removeprefix("$ "))
                    more = line.rstrip().endswith("\\")
            lines = out
        return "\n".join(lines)


    def transcript(self) -> list[tuple[str, list[str]]]:
        """(command, the output lines shown under it) for each ``$`` command of a prompted
        block, in order; empty for a block without prompts."""
        steps: list[tuple[str, list[str]]] = []
        more = False
        for line in self.text.splitlines():
            if more:
                steps[-1] = (steps[-1][0] + "\n" + line, steps[-1][1])
            elif line.startswith("$ "):
                steps.append((line.removeprefix("$ "), []))
            elif steps:
                steps[-1][1].append(line)
            more = (line.startswith("$ ") or more) and line.rstrip().endswith("\\")
        return steps


def blocks(path: Path) -> list[Block]:
    """Every shell block of a Markdown file, with the marker right before its fence."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")),
                   len(lines))
        if fence.group(1) in SHELL:
            before = lines[i - 1].strip() if i else ""
            m = _MARKER.search(before)
            found.append(Block(path.relative_to(ROOT).as_posix(), i + 1,
                               "\n".join(lines[i + 1:end]),
                               m.group(1) if m else None, m.group(2).strip() if m else ""))
        i = end + 1
    return found


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def all_blocks() -> list[Block]:
    return [b for doc in documents() for b in blocks(doc)]


def main() -> int:
    for b in all_blocks():
        print(f"{b.where}: {b.marker or 'unmarked'}"
              + (f" {b.argument}" if b.argument else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
