"""The README's examples run by themselves, as a reader pastes them, and print what they say."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs._markdown import blocks
from tests.docs.test_pages import run_alone

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.external  # each block in a fresh interpreter (a child process)
def test_readme_examples_run_by_themselves_and_print_what_they_say(owners_file: Path) -> None:
    runnable = [b for b in blocks(README.read_text(encoding="utf-8")) if b.runs]
    assert runnable, "the README should show an example"
    for block in runnable:
        run_alone(README, block.line, (), owners_file)  # the README's examples need kosong alone
