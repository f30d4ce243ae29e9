"""The README's example runs as written and prints what its comment says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs_and_prints_the_sum() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)
    assert blocks, "the README should show an example"
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "3\n"
