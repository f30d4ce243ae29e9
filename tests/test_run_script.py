"""`run.py`: the Quickstart's first command installs only what the demo needs."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import run  # noqa: E402


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["optional-dependencies"]


def test_the_demo_installs_only_its_own_extra_and_tests_install_dev() -> None:
    assert run.DEMO_EXTRAS == ("demo",)
    assert run.DEV_EXTRAS == ("dev",)
    dev_only = ("pytest", "pyright[nodejs]", "playwright")
    assert not any(name.split(">")[0] in dev_only for name in _extras()["demo"])


def test_the_dev_extra_holds_everything_the_demo_extra_has() -> None:
    extras = _extras()
    assert set(extras["demo"]) <= set(extras["dev"])


def test_a_venv_is_installed_again_only_when_a_command_needs_more() -> None:
    assert run.needs_install((), ("demo",))  # nothing installed, or pyproject changed
    assert not run.needs_install(("demo",), ("demo",))
    assert run.needs_install(("demo",), ("dev",))  # `test` after `demo` adds the rest
    assert not run.needs_install(("dev",), ("demo",))  # `demo` after `test` needs nothing


def test_the_install_stamp_is_ignored_once_pyproject_changes(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp"
    stamp.write_text("abc demo")
    assert run._installed(stamp, "abc") == ("demo",)
    assert run._installed(stamp, "def") == ()
    stamp.write_text("abc")  # the stamp of an older run.py
    assert run._installed(stamp, "abc") == ()
