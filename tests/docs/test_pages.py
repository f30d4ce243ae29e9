"""Every ```python block of every page under docs/ runs by itself, as a reader pastes it.

Each block runs alone in a fresh interpreter (`_alone`), with only what kosong and the extras
the page names at its top install: a block that uses a name defined by another block, or a
package its page does not name, fails here, naming the block. A page whose first lines say "The
examples of this page are one script" runs its blocks in order in one interpreter. A block
whose opening fence is ```python skip is shown but not run (say, one that needs an API key).
Top-level `await` is allowed, since examples often show async code; a page that uses it says
once how to run such examples (`python -m asyncio`), and a page whose examples are plain
scripts says that. Every `print` states its output, in a comment on its line or right below it
(see `_printed`). And every page renders as meant (`_markdown.problems`, CommonMark's parse).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs._alone import OWNERS_FILE
from tests.docs._markdown import blocks, problems

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
INSTALL = re.compile(r"pip install -e '?\.(?:\[([\w,-]+)\])?'?")
SAY_INSTALL = (
    "say in the page's first lines what its examples need installed, as the command a reader "
    "runs in a clone: `pip install -e .` (kosong alone) or `pip install -e '.[server,mcp]'`"
)


def page_extras(page: Path) -> tuple[str, ...]:
    """The extras a page names at its top, in its `pip install -e ...` line."""
    head = "\n".join(page.read_text(encoding="utf-8").splitlines()[:12])
    found = INSTALL.search(head)
    assert found is not None, f"{page.name}: {SAY_INSTALL}"
    return tuple(found.group(1).split(",")) if found.group(1) else ()


def run_alone(page: Path, line: int, extras: tuple[str, ...], owners: Path) -> None:
    """Run the block at `line` of `page` alone; fail saying which block and why.

    `owners` is the file of which distribution installed what (the `owners_file` fixture).
    """
    env = {**os.environ, OWNERS_FILE: str(owners)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.docs._alone", str(page), str(line), ",".join(extras)],
        cwd=ROOT, capture_output=True, text=True, timeout=110, check=False, env=env,
    )  # fmt: skip
    if done.returncode != 0 and line == 0:
        error = done.stderr.strip().splitlines()[-12:]
        pytest.fail(
            f"{page.name}: its blocks, run in order in a fresh interpreter with only the "
            f"extras {list(extras) or 'none'}, fail:\n" + "\n".join(error),
            pytrace=False,
        )
    if done.returncode != 0:
        error = done.stderr.strip().splitlines()[-12:]
        pytest.fail(
            f"{page.name}:{line}: this block fails when it runs by itself in a fresh "
            f"interpreter with only the extras {list(extras) or 'none'} (named at the top of "
            f"{page.name}). Each block must hold its own imports and definitions, repeating "
            "what an earlier block defined, and use only what the page says to install.\n"
            + "\n".join(error),
            pytrace=False,
        )


ONE_SCRIPT = "The examples of this page are one script"
"""What a page whose blocks build on each other says in its first lines; they then run in
order in one fresh interpreter, as a reader pastes the page."""


def is_one_script(page: Path) -> bool:
    return ONE_SCRIPT in " ".join(page.read_text(encoding="utf-8").splitlines()[:12])


END_TO_END = {"tutorial.md"}
"""Pages whose blocks need the files and servers of their earlier steps: their own test runs
them, every step in order (test_tutorial.py)."""

CASES = [
    pytest.param(page, 0, id=f"{page.name} (one script)")
    if is_one_script(page)
    else pytest.param(page, block.line, id=f"{page.name}:{block.line}")
    for page in PAGES
    if page.name not in END_TO_END
    for block in blocks(page.read_text(encoding="utf-8"))[: 1 if is_one_script(page) else None]
    if block.runs or is_one_script(page)
]


@pytest.mark.external  # each block in a fresh interpreter (a child process)
@pytest.mark.parametrize(("page", "line"), CASES)
def test_each_block_runs_by_itself_in_a_fresh_interpreter(
    page: Path, line: int, owners_file: Path
) -> None:
    run_alone(page, line, page_extras(page), owners_file)


@pytest.mark.external  # blocks in a child interpreter
def test_a_block_that_needs_another_blocks_names_or_an_unnamed_extra_fails(
    tmp_path: Path, owners_file: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n```python\nimport starlette\nx = 1\n```\n\n```python\nprint(x)  # 1\n```\n"
    )
    with pytest.raises(pytest.fail.Exception) as unnamed:
        run_alone(page, 3, (), owners_file)
    assert "page.md:3: this block fails when it runs by itself" in str(unnamed.value)
    assert (
        "ModuleNotFoundError: No module named 'starlette' (its distribution starlette is "
        "not installed by kosong or the extras this page names)" in str(unnamed.value)
    )
    run_alone(page, 3, ("server",), owners_file)  # the server extra installs starlette
    with pytest.raises(pytest.fail.Exception) as borrowed:
        run_alone(page, 8, ("server",), owners_file)
    assert "NameError: name 'x' is not defined" in str(borrowed.value)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_each_page_has_an_example_and_says_what_to_install(page: Path) -> None:
    assert any(b.runs for b in blocks(page.read_text(encoding="utf-8"))), (
        f"{page.name} has no runnable python example"
    )
    page_extras(page)


MARKDOWN = [*PAGES, ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "BENCHMARKS.md"]


@pytest.mark.parametrize("page", MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_each_page_renders_as_meant_by_commonmark(page: Path) -> None:
    found = problems(page)
    assert not found, "\n".join(found)


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
    runnable = [b.source for b in blocks(text) if b.runs]
    if any(_awaits_at_top_level(source) for source in runnable):
        assert text.count("`python -m asyncio`") == 1, (
            f"{page.name} awaits at the top level: say once that its examples run in "
            "`python -m asyncio`"
        )
    else:
        assert text.count("are plain scripts") == 1, (
            f"{page.name}: say once that its examples are plain scripts"
        )
