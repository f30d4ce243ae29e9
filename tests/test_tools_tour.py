"""The tools tour (examples/tools_tour.py) runs and shows what its docstring says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOUR = Path(__file__).resolve().parents[1] / "examples" / "tools_tour.py"


@pytest.mark.external  # the tour in a child process
def test_tools_tour_dispatches_a_concurrent_batch_and_reports_every_result() -> None:
    done = subprocess.run(
        [sys.executable, str(TOUR)], capture_output=True, text=True, timeout=60, check=True
    )
    out = done.stdout
    assert done.stderr == ""
    assert out.count("[ok   ]") == 6
    assert out.count("[error]") == 8
    assert "Tool `translate` not found" in out
    assert '{"converted":16.093}' in out
    assert "ConnectionError: upstream closed the connection" in out
    elapsed = float(out.rsplit("took ", 1)[1].split(" s")[0])
    # One after another, the four 0.2 s calls take 0.8 s at least; together, about 0.2 s (a
    # busy machine may add some: anything below 0.8 s proves they overlapped).
    assert elapsed < 0.8, "the 0.2 s calls should overlap"
