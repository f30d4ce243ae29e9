"""Run one code block of a page the way a reader pastes it: alone, in a fresh interpreter.

    python -m tests.docs._alone PAGE LINE EXTRAS

runs the ```python block whose fence is at LINE of PAGE (LINE 0: every block of a page that is
one script, in order), as `__main__`, with only the packages
kosong and the extras EXTRAS (comma-separated, the ones the page names at its top) install:
importing any other installed distribution fails as if it were not installed. What the block
prints is checked against what it says (`_printed`). Exit code 0 when it ran and printed what
it says.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import json
import os
import sys
import sysconfig
import types
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.docs._markdown import blocks
from tests.docs._printed import run_checked

DISTRIBUTION = "kosong-tools"


def allowed_distributions(extras: Sequence[str]) -> set[str]:
    """kosong's distribution and everything it and `extras` require, transitively."""
    allowed: set[str] = set()
    pending = [(DISTRIBUTION, tuple(extras))]
    while pending:
        name, wanted = pending.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # required but not installed here: nothing to allow
        key = _key(dist.metadata["Name"])
        if key in allowed and not wanted:
            continue
        allowed.add(key)
        for text in dist.requires or []:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in ("", *wanted)):
                pending.append((requirement.name, tuple(requirement.extras)))
    return allowed


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


OWNERS_FILE = "KOSONG_DOCS_OWNERS"
"""The variable naming a JSON file of `owners()`, written once by the test session (reading
every distribution's file list takes about a second: too long to repeat for each block)."""


def owners() -> dict[str, set[str]]:
    """`owners()` read from the file `KOSONG_DOCS_OWNERS` names, or computed."""
    cached = os.environ.get(OWNERS_FILE)
    if cached:
        return {k: set(v) for k, v in json.loads(Path(cached).read_text()).items()}
    return _owners()


def write_owners(path: Path) -> None:
    """Write `owners()` to `path` for the runs that follow (see `OWNERS_FILE`)."""
    path.write_text(json.dumps({k: sorted(v) for k, v in _owners().items()}))


def _owners() -> dict[str, set[str]]:
    """`site-packages/<top>` (and `<top>/<sub>` for namespace packages) -> distributions."""
    owners: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = _key(dist.metadata["Name"])  # read once: each access parses METADATA again
        for file in dist.files or ():
            parts = file.parts
            if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] == "..":
                continue
            top = parts[0].removesuffix(".py")
            owners.setdefault(top, set()).add(name)
            if len(parts) > 2:
                owners.setdefault(f"{top}/{parts[1]}", set()).add(name)
    return owners


class _OnlyTheseDistributions(importlib.abc.MetaPathFinder):
    """Refuses a module of site-packages that no allowed distribution installed."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.owners = owners()
        self.site = {Path(p).resolve() for p in (sysconfig.get_paths()["purelib"],
                                                 sysconfig.get_paths()["platlib"])}  # fmt: skip

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        spec = importlib.machinery.PathFinder.find_spec(name, path)  # pyright: ignore[reportArgumentType]
        where = spec.origin if spec and spec.origin not in (None, "built-in", "frozen") else None
        if where is None and spec and spec.submodule_search_locations:
            where = next(iter(spec.submodule_search_locations), None)
        if where is None:
            return None
        resolved = Path(where).resolve()
        for site in self.site:
            if resolved.is_relative_to(site):
                relative = resolved.relative_to(site).parts
                top = relative[0].removesuffix(".py")
                owners = self.owners.get(f"{top}/{relative[1]}" if len(relative) > 2 else top)
                owners = owners or self.owners.get(top, set())
                if owners and not owners & self.allowed:
                    raise ModuleNotFoundError(
                        f"No module named {name!r} (its distribution {', '.join(sorted(owners))} "
                        "is not installed by kosong or the extras this page names)",
                        name=name,
                    )
        return None


def main(argv: list[str]) -> int:
    page, extras = Path(argv[0]), [e for e in argv[2].split(",") if e]
    runnable = [b for b in blocks(page.read_text(encoding="utf-8")) if b.runs]
    # LINE 0: the page is one script, its blocks run in order in one interpreter.
    chosen = runnable if argv[1] == "0" else [b for b in runnable if b.line == int(argv[1])]
    sys.meta_path.insert(0, _OnlyTheseDistributions(allowed_distributions(extras)))
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module  # pydantic resolves annotations through the module
    loop = asyncio.new_event_loop()
    try:
        for block in chosen:
            run_checked(block.source, f"{page.name}:{block.line}", module.__dict__, loop)
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=10))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
