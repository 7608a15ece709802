"""Blocks -> Markdown (GitHub flavour: pipe tables, images by relative path)."""

from __future__ import annotations

from evalstop.report.blocks import Block, Bullets, Contents, Heading, Image, Para, Table


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[Block]) -> str:
    parts: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            parts.append(b.text)
        elif isinstance(b, Bullets):
            parts.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            lines = ["| " + " | ".join(_cell(h) for h in b.header) + " |",
                     "|" + "|".join(" --- " for _ in b.header) + "|"]
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in b.rows]
            if b.caption:
                lines = [f"*{b.caption}*", "", *lines]
            parts.append("\n".join(lines))
        elif isinstance(b, Image):
            parts.append(f"![{b.caption}]({b.path})\n\n*{b.caption}*")
        elif isinstance(b, Contents):
            parts.append("**Contents**\n\n" + "\n".join(f"- {item}" for item in b.items))
        else:
            raise TypeError(f"unknown report block {b!r}")
    return "\n\n".join(parts) + "\n"
