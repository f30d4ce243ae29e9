#!/usr/bin/env python3
"""One entry point for the project: `python3 run.py demo | test | bench | lint`.

It needs only a `python3` (3.11 or newer) on the machine. On first use it creates `.venv` with
the newest Python it can find (3.13, 3.12, then 3.11; the documents' examples need 3.12+ for
`typing.override`) and installs the package with its development extras; it reinstalls when
pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".kosong-installed"
EXTRAS = "dev"


def _candidates() -> list[str]:
    found: list[str] = []
    for version in ("3.13", "3.12", "3.11"):
        exe = shutil.which(f"python{version}")
        if exe:
            found.append(exe)
        pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
        for path in sorted(pyenv_root.glob(f"versions/{version}.*/bin/python{version}")):
            found.append(str(path))
    found.append(sys.executable)
    return found


def _works(python: str) -> bool:
    try:
        out = subprocess.run(
            [python, "-c", "import sys, venv; print(sys.version_info >= (3, 11))"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except OSError:
        return False
    return out.stdout.strip() == "True"


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """Create or refresh .venv; return its interpreter."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    python = _venv_python()
    if python.exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return python
    if not python.exists():
        base = next((p for p in _candidates() if _works(p)), None)
        if base is None:
            sys.exit("run.py: no Python 3.11+ interpreter found")
        print(f"run.py: creating .venv with {base}", flush=True)
        subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    print("run.py: installing kosong and its development dependencies", flush=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-e", f"{ROOT}[{EXTRAS}]"], check=True)
    STAMP.write_text(wanted)
    return python


def _run(*args: str) -> int:
    return subprocess.run(list(args), cwd=ROOT, check=False).returncode


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "demo"
    rest = argv[1:]
    python = str(ensure_venv())
    if command == "demo":
        return _run(python, "examples/demo.py", *rest)
    if command == "lint":
        return (
            _run(python, "-m", "ruff", "check", "src", "tests", "benchmarks", "examples")
            or _run(
                python, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks", "examples"
            )
            or _run(python, "-m", "pyright", "src")
        )
    if command == "test":
        lint = main(["lint"])
        tests = _run(python, "-m", "pytest", *rest)
        return lint or tests
    if command == "bench":
        return _run(python, "benchmarks/bench_dispatch.py", *rest)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
