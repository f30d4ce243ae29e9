"""What a documentation example says it prints, checked against what it prints.

In an example, every `print(...)` states its output, one of two ways:

    print(total)   # 3                  on the same line, for one printed line
    print(rows)                         or in the comment lines right below it
    # first row                         (all the lines that print call gives,
    # second row                         also when it runs in a loop)

`run_checked` runs a block with a `print` that records which line printed what, then compares
each line's output with what the block says, and fails naming the line.
"""

from __future__ import annotations

import ast
import asyncio
import io
import re
import sys
from collections import defaultdict
from typing import Any

_INLINE = re.compile(r"^(?P<code>.*?\bprint\(.*?)\s+#\s?(?P<text>.*)$")


def expectations(source: str) -> dict[int, list[str]]:
    """Line number (1-based) of each `print(` call -> the lines it says it prints."""
    lines = source.splitlines()
    wanted: dict[int, list[str]] = {}
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ):
            number = node.lineno
            line = lines[number - 1]
            end_line = lines[(node.end_lineno or number) - 1]
            inline = _INLINE.match(end_line)
            if inline and "#" in end_line[end_line.rfind(")") :]:
                wanted[number] = [inline.group("text")]
                continue
            below: list[str] = []
            for following in lines[(node.end_lineno or number) :]:
                stripped = following.strip()
                if not stripped.startswith("#"):
                    break
                below.append(stripped[1:].removeprefix(" "))
            if not below:
                raise AssertionError(f"line {number}: say what `{line.strip()}` prints")
            wanted[number] = below
    return wanted


def run_checked(
    source: str, filename: str, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop
) -> None:
    """Run `source` in `namespace`, checking what it prints.

    Top-level `await` runs on `loop` (an example may also call `asyncio.run` itself).
    """
    printed: dict[int, list[str]] = defaultdict(list)

    def recording_print(
        *values: Any, sep: str | None = " ", end: str | None = "\n", **_: Any
    ) -> None:
        buffer = io.StringIO()
        print(*values, sep=sep, end=end, file=buffer)
        frame = sys._getframe(1)
        while frame.f_code.co_filename != filename and frame.f_back is not None:
            frame = frame.f_back
        # Trailing spaces cannot be written in a comment: they do not count.
        printed[frame.f_lineno].extend(line.rstrip() for line in buffer.getvalue().splitlines())

    wanted = expectations(source)
    namespace["print"] = recording_print
    try:
        code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            loop.run_until_complete(result)
    finally:
        del namespace["print"]
    for number, lines in wanted.items():
        assert printed.get(number) == lines, (
            f"{filename}, line {number}: printed {printed.get(number)!r}, "
            f"the example says {lines!r}"
        )
