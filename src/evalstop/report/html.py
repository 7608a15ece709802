"""Blocks -> one self-contained HTML page: simple CSS inline, PNGs embedded as base64, so
the file can be mailed or attached on its own."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from evalstop.report.blocks import (
    Block,
    Bullets,
    Contents,
    Heading,
    Image,
    Para,
    Table,
    heading_anchors,
)
from evalstop.report.plots import COLUMNS_KEY

# `code` may break anywhere: a rule's full spec (150 characters, no spaces) would otherwise
# widen its table past a 1366 px window.
CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1320px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
h1, h2, h3 { line-height: 1.2; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: .3em; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
nav.toc { background: #f7f7f7; border: 1px solid #ddd; padding: .4em 1.2em; margin: 1em 0; }
nav.toc ul { margin: .2em 0; } .verdict { font-size: 1.05em; }
figcaption { font-style: italic; color: #555; }
code { background: #f3f3f3; padding: 0 .2em; border-radius: 3px; overflow-wrap: anywhere; }
"""

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_LINK = re.compile(r"\[([^\]]+)\]\(#([\w-]+)\)")


def inline(text: str) -> str:
    out = html.escape(text, quote=False)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _LINK.sub(r'<a href="#\2">\1</a>', out)
    return _BOLD.sub(r"<strong>\1</strong>", out)


def _img(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def png_text(data: bytes, key: str) -> str | None:
    """The value of a PNG ``tEXt`` chunk (None if absent): how many panels a figure sets
    side by side (``plots.save_png``)."""
    pos = 8  # after the signature
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"tEXt":
            name, _, value = data[pos + 8:pos + 8 + length].partition(b"\0")
            if name.decode("latin-1") == key:
                return value.decode("latin-1")
        if kind == b"IDAT":  # matplotlib writes its text before the image data
            return None
        pos += 12 + length
    return None


def to_html(blocks: list[Block], base_dir: Path, title: str) -> str:
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"]
    anchors = heading_anchors(blocks)
    for i, b in enumerate(blocks):
        if isinstance(b, Heading):
            parts.append(f"<h{b.level} id=\"{anchors[i]}\">{inline(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            parts.append(f"<p>{inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            parts.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            cap = f"<caption>{inline(b.caption)}</caption>" if b.caption else ""
            head = "".join(f"<th>{inline(h)}</th>" for h in b.header)
            body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>"
                           for row in b.rows)
            parts.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif isinstance(b, Image):
            data = (base_dir / b.path).read_bytes()
            columns = png_text(data, COLUMNS_KEY) or "1"
            alt = html.escape(b.caption)
            parts.append(f"<figure><img src=\"{_img(data)}\" alt=\"{alt}\" "
                         f"data-columns=\"{html.escape(columns)}\">"
                         f"<figcaption>{inline(b.caption)}</figcaption></figure>")
        elif isinstance(b, Contents):
            parts.append("<nav class=\"toc\"><strong>Contents</strong><ul>"
                         + "".join(f"<li>{inline(i)}</li>" for i in b.items) + "</ul></nav>")
        else:
            raise TypeError(f"unknown report block {b!r}")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
