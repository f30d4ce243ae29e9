"""What every doc test's runs share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs._alone import write_owners


@pytest.fixture(scope="session")
def owners_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Which distribution installed what, written once for every block's run (`_alone`)."""
    path = tmp_path_factory.mktemp("docs") / "owners.json"
    write_owners(path)
    return path
