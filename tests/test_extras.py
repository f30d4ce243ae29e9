"""`install_hint`: what an ImportError tells the user to install, read from the metadata."""

from __future__ import annotations

import tomllib
from pathlib import Path

from kosong._extras import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parents[1]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    return project["optional-dependencies"]


def test_install_hint_names_every_requirement_of_the_extra_and_not_the_kosong_distribution() -> (
    None
):
    for extra in ("mcp", "server", "search", "auth"):
        hint = install_hint(extra)
        assert hint.startswith("pip install '") and hint.endswith(f"(kosong's `{extra}` extra)")
        for requirement in _extras()[extra]:
            assert f"'{requirement.replace(' ', '').lower()}'" in hint.lower()
        assert "kosong[" not in hint


def test_install_hint_for_an_extra_the_metadata_lacks_is_the_editable_install_of_the_clone() -> (
    None
):
    assert install_hint("nosuch") == "pip install -e '.[nosuch]' in your clone of kosong"
