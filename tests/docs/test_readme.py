"""The README's examples run as written and print what their comments say."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from pathlib import Path

from tests.docs._printed import run_checked

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_examples_run_and_print_what_they_say() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert blocks, "the README should show an example"
    module = types.ModuleType("readme_example")
    sys.modules[module.__name__] = module  # pydantic resolves annotations through the module
    loop = asyncio.new_event_loop()
    try:
        for number, source in enumerate(blocks, 1):
            run_checked(source, f"README.md block {number}", module.__dict__, loop)
    finally:
        del sys.modules[module.__name__]
        loop.close()
