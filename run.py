#!/usr/bin/env python3
"""One entry point for the project: `python3 run.py demo | test | bench | lint | compat`.

    python3 run.py demo            the agent demo (offline unless a model's API key is set)
    python3 run.py test [ARGS]     lint, then the test suite (ARGS go to pytest)
    python3 run.py test -m "not external"
                                   the quick loop: the in-process tests on four pytest-xdist
                                   workers (unless ARGS choose with -n), lint beside them
    python3 run.py lint            ruff check, ruff format --check, pyright
    python3 run.py compat [ARGS]   the test suite on Python 3.11, the oldest supported
    python3 run.py bench [ARGS]    the dispatch benchmark
    python3 run.py help            this text (also -h, --help), installing nothing

It needs only a `python3` (3.11 or newer) on the machine. On first use it creates `.venv` with
the newest Python it can find (3.13, 3.12, then 3.11; the documents' examples need 3.12+ for
`typing.override`) and installs the package with what the command needs: `demo` only the
`demo` extra (the model providers' SDKs), every other command the `dev` extra (test tools,
servers, the browser driver...). It installs again when pyproject.toml changes or a command
needs more than is installed. `compat` runs the tests again on Python 3.11, the oldest supported.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
COMPAT_VENV = ROOT / ".venv-3.11"
DEMO_EXTRAS = ("demo",)
DEV_EXTRAS = ("dev",)  # `dev` includes everything `demo` has


def _candidates(versions: tuple[str, ...] = ("3.13", "3.12", "3.11")) -> list[str]:
    found: list[str] = []
    for version in versions:
        exe = shutil.which(f"python{version}")
        if exe:
            found.append(exe)
        pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
        for path in sorted(pyenv_root.glob(f"versions/{version}.*/bin/python{version}")):
            found.append(str(path))
    if sys.version_info[:2] >= (3, 11):
        found.append(sys.executable)
    return found


def _works(python: str, oldest: tuple[int, int] = (3, 11)) -> bool:
    try:
        out = subprocess.run(
            [python, "-c", f"import sys, venv; print(sys.version_info >= {oldest!r})"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except OSError:
        return False
    return out.stdout.strip() == "True"


def _installed(stamp: Path, wanted: str) -> tuple[str, ...]:
    """The extras installed in a venv, by its stamp; none when pyproject.toml changed since."""
    if not stamp.exists():
        return ()
    digest, _, extras = stamp.read_text().partition(" ")
    return tuple(extras.split(",")) if digest == wanted and extras else ()


def needs_install(installed: tuple[str, ...], extras: tuple[str, ...]) -> bool:
    """Whether a venv holding `installed` extras must install to have `extras`."""
    return not installed or not (set(extras) <= set(installed) or "dev" in installed)


def ensure_venv(
    venv: Path = VENV,
    versions: tuple[str, ...] = ("3.13", "3.12", "3.11"),
    extras: tuple[str, ...] = DEV_EXTRAS,
) -> Path:
    """Create or refresh a venv with the first working Python of `versions`; return it."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    python = venv / "bin" / "python"
    stamp = venv / ".kosong-installed"
    installed = _installed(stamp, wanted) if python.exists() else ()
    if not needs_install(installed, extras):
        return python
    if not python.exists():
        base = next((p for p in _candidates(versions) if _works(p)), None)
        if base is None:
            sys.exit(f"run.py: no Python {' or '.join(versions)} interpreter found")
        print(f"run.py: creating {venv.name} with {base}", flush=True)
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    what = "what the demo needs" if extras == DEMO_EXTRAS else "its development dependencies"
    print(f"run.py: installing kosong and {what}", flush=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-e", f"{ROOT}[{','.join(extras)}]"], check=True)
    stamp.write_text(f"{wanted} {','.join(extras)}")
    return python


def workers(args: list[str]) -> list[str]:
    """`-n 4` for the quick loop, unless `args` choose the workers.

    The quick loop's tests (`-m "not external"`) share no process, port or file, and most of
    their time is waiting (sockets, timers), so four workers overlap it even on two cores
    (measured: 89 s of pytest on two workers, 53 s on four).
    """
    chosen = any(a.startswith(("-n", "--numprocesses", "--dist")) or a == "no:xdist" for a in args)
    quick = any("not external" in a for a in args)
    return ["-n", "4"] if quick and not chosen else []


def _run(*args: str, output: list[str] | None = None) -> int:
    """Run a command in the repository; what it prints goes to `output` if given."""
    if output is None:
        return subprocess.run(list(args), cwd=ROOT, check=False).returncode
    done = subprocess.run(list(args), cwd=ROOT, check=False, capture_output=True, text=True)
    output.append(done.stdout + done.stderr)
    return done.returncode


def _lint(python: str, output: list[str] | None = None) -> int:
    """ruff check, ruff format --check, then pyright, stopping at the first that fails."""
    paths = ("src", "tests", "benchmarks", "examples")
    for command in (
        ("ruff", "check", *paths),
        ("ruff", "format", "--check", *paths),
        ("pyright",),
    ):
        if code := _run(python, "-m", *command, output=output):
            return code
    return 0


COMMANDS = ("demo", "test", "lint", "compat", "bench")
HELP = ("help", "-h", "--help")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "demo"
    rest = argv[1:]
    if command in HELP:  # before anything is installed: usage costs nothing
        print(__doc__)
        return 0
    if command not in COMMANDS:
        print(f"run.py: unknown command {command!r}; the commands: {', '.join(COMMANDS)}\n")
        print(__doc__)
        return 2
    if command == "compat":  # the oldest supported Python, for CI
        old = str(ensure_venv(COMPAT_VENV, ("3.11",)))
        return _run(old, "-m", "pytest", "-p", "no:cacheprovider", *rest)
    if command == "demo":
        return _run(str(ensure_venv(extras=DEMO_EXTRAS)), "examples/demo.py", *rest)
    python = str(ensure_venv())
    if command == "lint":
        return _lint(python)
    if command == "test":
        if quick := workers(rest):
            # The quick loop's tests mostly wait (sockets, timers): lint runs beside them on
            # the CPU they leave, its output held and printed after theirs.
            output: list[str] = []
            with ThreadPoolExecutor(1) as pool:
                linting = pool.submit(_lint, python, output)
                tests = _run(python, "-m", "pytest", *quick, *rest)
                lint = linting.result()
            print("".join(output), end="", flush=True)
            return lint or tests
        lint = _lint(python)
        tests = _run(python, "-m", "pytest", *rest)
        return lint or tests
    return _run(python, "benchmarks/bench_dispatch.py", *rest)  # bench


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
