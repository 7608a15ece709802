"""Figure markers in the documentation: a quoted number that names the file it came from.

A measured figure in README.md or docs/**/*.md may carry a marker right after it:

    precision 0.954<!-- fig: benchmarks/results/issue11/judge.json parts."synthetic (additive)".rows[rule=default,noise=stated].precision -->
    recall 91.7%<!-- fig: docs/results/reproduce/main_summary.csv [method="EvalStop+SRTF-Est",metric=recall].mean -->

* The number is the text immediately before ``<!--`` (no space between): an optional
  sign (``-``, ``+`` or ``−``), digits (``82,247`` allowed), optional decimals, and an
  optional ``%``. A ``%`` means the file holds a fraction and the text shows it x100;
  ``scale=1`` after the key says the file already holds the percentage (e.g. a
  ``delta_pct`` column). ``scale=N`` multiplies by any N.
* FILE is relative to the repository root (no spaces, never outside the repository);
  ``.json`` and ``.csv`` are read. A CSV is a list of rows (dicts of column -> text).
* KEY is a path of segments: a name (``parts``), a quoted name (``"synthetic
  (additive)"``) joined by dots, ``[3]`` for a list index, and ``[field=value,...]`` to
  pick the one element of a list of dicts whose fields equal the values (compared as
  text; a value may be quoted). No match, or more than one, is an error.
* The quoted number must equal the file's value x scale rounded to the decimals shown
  (either way on an exact tie).

``check_text`` returns the problems of one document; ``python tests/docs_figures.py``
lists every marker of the repository with its verdict.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MARKER = re.compile(r"<!--\s*fig:\s*(?P<body>.*?)\s*-->", re.S)
# The number that ends right where the marker starts: sign, digits (thousands may be
# grouped with commas), decimals, percent sign.
NUMBER = re.compile(r"(?P<sign>[-+\u2212]?)(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
                    r"(?P<pct>%?)$")


class FigureError(ValueError):
    """A marker that cannot be checked: bad syntax, missing file or key."""


@dataclass(frozen=True)
class Marker:
    line: int
    quoted: str        # the number as written, sign and % included
    file: str
    key: str
    scale: float


def _split_body(body: str) -> tuple[str, str, dict[str, str]]:
    """FILE KEY [opt=value ...]; KEY ends at the first whitespace outside quotes."""
    parts = body.split(None, 1)
    if len(parts) != 2:
        raise FigureError(f"marker needs 'FILE KEY', got {body!r}")
    file, rest = parts
    quote = False
    end = len(rest)
    for i, ch in enumerate(rest):
        if ch == '"':
            quote = not quote
        elif ch.isspace() and not quote:
            end = i
            break
    if quote:
        raise FigureError(f"unclosed quote in key {rest!r}")
    key, opts = rest[:end], rest[end:].split()
    options = {}
    for opt in opts:
        name, eq, value = opt.partition("=")
        if not eq or name != "scale":
            raise FigureError(f"unknown marker option {opt!r} (known: scale=N)")
        options[name] = value
    return file, key, options


FENCE = re.compile(r"^(?P<f>```|~~~).*?^(?P=f)[ \t]*$", re.S | re.M)


def _blank_fences(text: str) -> str:
    """Fenced code keeps its newlines but loses its text: a marker shown there is an example."""
    return FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def find_markers(text: str) -> list[Marker]:
    text = _blank_fences(text)
    markers = []
    for m in MARKER.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()]
        num = NUMBER.search(before[-40:])
        if num is None:
            raise FigureError(f"line {line}: no number right before the marker")
        try:
            file, key, options = _split_body(m.group("body"))
        except FigureError as e:
            raise FigureError(f"line {line}: {e}") from None
        sign, pct = num.group("sign"), num.group("pct")
        # A sign counts only at the start of a word: after a digit, letter or "%" it is the
        # hyphen of a range ("0.01-0.12", "0.2%-30.9%"), not a minus.
        if sign and num.start() > 0 and before[-40:][num.start() - 1] not in " \t\n([{/:=~*_|":
            sign = ""
        quoted = sign + num.group("num") + pct
        try:
            scale = float(options["scale"]) if "scale" in options else (100.0 if pct else 1.0)
        except ValueError:
            raise FigureError(f"line {line}: scale must be a number") from None
        markers.append(Marker(line, quoted, file, key, scale))
    return markers


_SEGMENT = re.compile(r'"(?P<q>[^"]*)"|(?P<name>[^."\[\]]+)|\[(?P<sel>(?:[^\]"]|"[^"]*")*)\]')


def parse_key(key: str) -> list:
    """The key as a list of str (name), int (index) and dict (selector) segments."""
    out: list = []
    pos = 0
    while pos < len(key):
        if key[pos] == "." and out and pos + 1 < len(key):
            pos += 1
        m = _SEGMENT.match(key, pos)
        if m is None:
            raise FigureError(f"cannot parse key {key!r} at {key[pos:]!r}")
        if m.group("q") is not None:
            out.append(m.group("q"))
        elif m.group("name") is not None:
            out.append(m.group("name"))
        else:
            sel = m.group("sel").strip()
            if re.fullmatch(r"-?\d+", sel):
                out.append(int(sel))
            else:
                out.append(_parse_selector(sel, key))
        pos = m.end()
    if not out:
        raise FigureError("empty key")
    return out


def _parse_selector(sel: str, key: str) -> dict:
    pairs = re.findall(r'\s*([^=,\s]+)\s*=\s*("[^"]*"|[^,]*)\s*(?:,|$)', sel)
    rebuilt = ",".join(f"{k}={v}" for k, v in pairs)
    if not pairs or rebuilt.replace(" ", "") != sel.replace(" ", ""):
        raise FigureError(f"bad selector [{sel}] in key {key!r}")
    return {k: v[1:-1] if v.startswith('"') else v.strip() for k, v in pairs}


def load(path: Path):
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    raise FigureError(f"{path.name}: only .json and .csv files can be cited")


def lookup(data, segments: list, key: str):
    node = data
    for seg in segments:
        if isinstance(seg, str):
            if not isinstance(node, dict) or seg not in node:
                raise FigureError(f"key {key!r}: no {seg!r}")
            node = node[seg]
        elif isinstance(seg, int):
            if not isinstance(node, list) or not -len(node) <= seg < len(node):
                raise FigureError(f"key {key!r}: no index [{seg}]")
            node = node[seg]
        else:
            if not isinstance(node, list):
                raise FigureError(f"key {key!r}: selector on a non-list")
            hits = [row for row in node if isinstance(row, dict)
                    and all(k in row and _text(row[k]) == v for k, v in seg.items())]
            if len(hits) != 1:
                raise FigureError(f"key {key!r}: selector {seg} matches {len(hits)} rows")
            node = hits[0]
    return node


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _number(value, key: str) -> float:
    if isinstance(value, bool) or value is None:
        raise FigureError(f"key {key!r}: value {value!r} is not a number")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise FigureError(f"key {key!r}: value {value!r} is not a number") from None
    if not math.isfinite(out):
        raise FigureError(f"key {key!r}: value {value!r} is not finite")
    return out


def agrees(quoted: str, value: float, scale: float) -> bool:
    """Does the quoted text equal value x scale rounded to the decimals it shows?"""
    text = quoted.rstrip("%").replace(",", "").replace("−", "-")
    decimals = len(text.split(".")[1]) if "." in text else 0
    shown = float(text)
    exact = value * scale
    # Half a unit of the last decimal either way; the small slack absorbs binary floats.
    return abs(shown - exact) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9) + 1e-12


def resolve(file: str, root: Path) -> Path:
    path = (root / file).resolve()
    if root.resolve() not in path.parents:
        raise FigureError(f"{file}: outside the repository")
    if not path.is_file():
        raise FigureError(f"{file}: no such file")
    return path


def check_text(text: str, root: Path = ROOT) -> tuple[int, list[str]]:
    """(markers checked, problems as 'line N: ...') for one document."""
    try:
        markers = find_markers(text)
    except FigureError as e:
        return 0, [str(e)]
    problems = []
    cache: dict[Path, object] = {}
    for mk in markers:
        try:
            path = resolve(mk.file, root)
            if path not in cache:
                cache[path] = load(path)
            value = _number(lookup(cache[path], parse_key(mk.key), mk.key), mk.key)
        except (FigureError, OSError, json.JSONDecodeError, csv.Error) as e:
            problems.append(f"line {mk.line}: {e}")
            continue
        if not agrees(mk.quoted, value, mk.scale):
            problems.append(f"line {mk.line}: quoted {mk.quoted}, but {mk.file} {mk.key} "
                            f"is {value!r} (x{mk.scale:g})")
    return len(markers), problems


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


if __name__ == "__main__":
    bad = 0
    for doc in documents():
        n, problems = check_text(doc.read_text(), ROOT)
        print(f"{doc.relative_to(ROOT)}: {n} marker(s), {len(problems)} problem(s)")
        for p in problems:
            print(f"  {p}")
        bad += len(problems)
    sys.exit(1 if bad else 0)
