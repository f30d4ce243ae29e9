"""Every ```python block of every page under docs/ runs as written and prints what it says.

Blocks of one page run in order in one namespace, so a page can build an example step by step.
A block whose opening fence is ```python skip is shown but not run (say, one that needs an API
key). Top-level `await` is allowed, since examples often show async code; a page that uses it
says once how to run such examples (`python -m asyncio`), and a page whose examples are plain
scripts says that. Every `print` states its output, in a comment on its line or right below
it (see `_printed`).
"""

from __future__ import annotations

import ast
import asyncio
import re
import sys
import types
from pathlib import Path

import pytest

from tests.docs._printed import run_checked

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)


def _blocks(page: Path) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    return [
        (text[: m.start()].count("\n") + 1, m.group(2))
        for m in BLOCK.finditer(text)
        if "skip" not in m.group(1)
    ]


def _run_page(page: Path) -> None:
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # pydantic resolves annotations through the module
    loop = asyncio.new_event_loop()
    try:
        for line, source in _blocks(page):
            run_checked(source, f"{page.name}:{line}", module.__dict__, loop)
    finally:
        del sys.modules[module.__name__]
        # What a library left running (sse-starlette's shutdown watcher) ends with the page.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=10))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


PAGES = sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_docs_page_examples_run(page: Path) -> None:
    assert _blocks(page), f"{page.name} has no runnable python example"
    _run_page(page)


def _awaits_at_top_level(source: str) -> bool:
    pending: list[ast.AST] = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # an await in there runs in a coroutine, not at the top level
        if isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_each_page_says_once_how_its_examples_run(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    if any(_awaits_at_top_level(source) for _, source in _blocks(page)):
        assert text.count("`python -m asyncio`") == 1, (
            f"{page.name} awaits at the top level: say once that its examples run in "
            "`python -m asyncio`"
        )
    else:
        assert text.count("are plain scripts") == 1, (
            f"{page.name}: say once that its examples are plain scripts"
        )
