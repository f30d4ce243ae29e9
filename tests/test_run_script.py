"""`run.py`: the Quickstart's first command installs only what the demo needs, and the demo
needs nothing more."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


def test_the_readmes_first_command_runs_the_demo_with_the_demo_extra_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"^```bash\n(.*?)$", readme, re.M)
    assert first is not None and first.group(1).split("#")[0].strip() == "python3 run.py demo"
    asked: list[tuple[str, ...]] = []
    ran: list[tuple[str, ...]] = []

    def ensure(*args: object, extras: tuple[str, ...] = run.DEV_EXTRAS, **kw: object) -> Path:
        asked.append(extras)
        return Path("/venv/bin/python")

    monkeypatch.setattr(run, "ensure_venv", ensure)
    monkeypatch.setattr(run, "_run", lambda *args: ran.append(args) or 0)
    assert run.main(["demo"]) == 0
    assert asked == [("demo",)]
    assert ran == [("/venv/bin/python", "examples/demo.py")]


def test_the_quick_loop_runs_on_four_workers_unless_the_arguments_choose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert run.workers(["-m", "not external"]) == ["-n", "4"]
    assert run.workers(["-x", "-m", "not external and not interop"]) == ["-n", "4"]
    assert run.workers(["-m", "not external", "-n", "0"]) == []
    assert run.workers(["-m", "not external", "-p", "no:xdist"]) == []
    assert run.workers([]) == []  # the whole suite: its servers and processes, one at a time
    assert run.workers(["tests/test_step.py"]) == []
    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr(run, "ensure_venv", lambda *args, **kw: Path("/venv/bin/python"))
    monkeypatch.setattr(run, "_run", lambda *args, **kw: ran.append(args) or 0)
    assert run.main(["test", "-m", "not external"]) == 0
    assert ("/venv/bin/python", "-m", "pytest", "-n", "4", "-m", "not external") in ran
    assert {args[2] for args in ran} == {"ruff", "pyright", "pytest"}  # lint ran beside them


# Installed by `dev` only: the demo must run without any of them.
DEV_ONLY_MODULES = (
    "pytest", "hypothesis", "playwright", "mcp", "starlette", "uvicorn", "redis",
    "langchain_core", "bm25s", "Stemmer", "numpy", "tiktoken", "opentelemetry", "aiohttp",
    "click", "sse_starlette", "httpx_sse",
)  # fmt: skip

BLOCKER = """
import importlib.abc, runpy, sys
blocked = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"{name} is not installed by the demo extra")
        return None
sys.meta_path.insert(0, Block())
sys.argv = [sys.argv[2], "--offline"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.external  # the demo in a child interpreter
def test_the_demo_imports_nothing_that_only_the_dev_extra_installs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(DEV_ONLY_MODULES), str(ROOT / "examples/demo.py")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "answer: Here is what I found" in done.stdout


@pytest.mark.external  # run.py in a child process
@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["help"]])
def test_run_py_prints_its_usage_without_installing_anything(
    tmp_path: Path, argv: list[str]
) -> None:
    # A copy of run.py beside a pyproject.toml, no .venv: any install would create one.
    (tmp_path / "run.py").write_text((ROOT / "run.py").read_text())
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    done = subprocess.run(
        [sys.executable, "run.py", *argv], cwd=tmp_path, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "python3 run.py test [ARGS]" in done.stdout
    assert not (tmp_path / ".venv").exists()


@pytest.mark.external  # run.py in a child process
def test_run_py_answers_an_unknown_command_with_the_commands_and_installs_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "run.py").write_text((ROOT / "run.py").read_text())
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    done = subprocess.run(
        [sys.executable, "run.py", "tset"], cwd=tmp_path, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout.startswith(
        "run.py: unknown command 'tset'; the commands: demo, test, lint, compat, bench"
    )
    assert "python3 run.py help" in done.stdout
    assert not (tmp_path / ".venv").exists()
