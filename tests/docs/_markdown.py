"""The pages as a CommonMark renderer reads them: their code blocks, and what would not render.

markdown-it-py is a CommonMark parser (with GitHub's tables): the code blocks the doc tests run
are the ones a reader sees, and `problems` names what a renderer would show otherwise than the
author meant: a fence that does not close (text after a closing fence makes it an opening
one), a block without a language, a table row outside a table, a link to a missing file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

_PARSER = MarkdownIt("commonmark").enable("table")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True, slots=True)
class Block:
    """A fenced code block: the line of its opening fence, its info string, its text."""

    line: int
    info: str
    source: str

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def runs(self) -> bool:
        """A ```python block runs, unless its info says `skip`."""
        return self.language == "python" and "skip" not in self.info.split()[1:]


def _tokens(text: str) -> list[Token]:
    return _PARSER.parse(text)


def blocks(text: str) -> list[Block]:
    """Every fenced code block, as CommonMark reads it."""
    return [
        Block(token.map[0] + 1, token.info.strip(), token.content)
        for token in _tokens(text)
        if token.type == "fence" and token.map is not None
    ]


def problems(page: Path) -> list[str]:
    """What would render otherwise than meant, one line each (`page.md:LINE: ...`)."""
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    tokens = _tokens(text)
    found: list[str] = []
    in_table: set[int] = set()
    for token in tokens:
        if token.type == "table_open" and token.map is not None:
            in_table.update(range(token.map[0], token.map[1]))
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        if not token.info.strip():
            found.append(
                f"{page.name}:{start + 1}: say the block's language (```python, ```bash...)"
            )
        for offset, line in enumerate(token.content.splitlines()):
            if _FENCE.match(line):
                found.append(
                    f"{page.name}:{start + 2 + offset}: this fence does not close the block "
                    f"opened at line {start + 1}: a closing fence has nothing after it"
                )
        closed = end <= len(lines) and _FENCE.match(lines[end - 1]) and end - 1 > start
        if not closed:
            found.append(f"{page.name}:{start + 1}: this block is never closed")
    fenced = {n for t in tokens if t.type == "fence" and t.map for n in range(t.map[0], t.map[1])}
    for number, line in enumerate(lines):
        if number in fenced:
            continue
        if line.lstrip().startswith("|") and number not in in_table:
            found.append(f"{page.name}:{number + 1}: this table row is not part of a table")
        for target in _LINK.findall(line):
            path = target.split("#", 1)[0]
            if not path or "://" in path or path.startswith("mailto:"):
                continue
            if not (page.parent / path).exists():
                found.append(f"{page.name}:{number + 1}: the link to {path} names no file")
    return found
