"""The source tree's layering: no import cycle between kosong's packages and modules.

Each subpackage (`kosong.tooling`, `kosong.server`...) and each top-level module
(`kosong.message`, `kosong._step`...) is a node; an import anywhere in one of them (at the top
or inside a function) is an edge to the node it names. The graph must have no cycle, so any
piece can be read, tested and replaced with only what is below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "kosong"


def node_of(module: str) -> str | None:
    """The node a `kosong...` module belongs to (None for the root package itself)."""
    parts = module.split(".")
    if parts[0] != "kosong" or len(parts) == 1:
        return None
    return ".".join(parts[:2])


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        here = node_of(".".join(parts))
        if here is None:
            continue  # kosong/__init__.py re-exports; it is nobody's dependency
        edges = graph.setdefault(here, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                if node.module == "kosong":
                    names = [f"kosong.{alias.name}" for alias in node.names]
            for name in names:
                target = node_of(name)
                if target is not None and target != here:
                    edges.add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_no_import_cycle_between_kosongs_packages_and_modules() -> None:
    graph = import_graph()
    assert {"kosong.tooling", "kosong.standard", "kosong.server", "kosong.mcp"} <= graph.keys()
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_server_and_mcp_share_the_runs_below_them() -> None:
    graph = import_graph()
    assert "kosong.server" not in graph["kosong.mcp"]
    assert (
        "kosong.eventstore" in graph["kosong.mcp"] and "kosong.eventstore" in graph["kosong.server"]
    )
    # Runs execute calls through the pipeline, and know neither protocol that serves them.
    assert not graph["kosong.eventstore"] & {"kosong.server", "kosong.mcp", "kosong.remote"}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def private_imports_across_packages() -> list[str]:
    """`kosong.a` importing `kosong.b._x`: a private module of another package."""
    found: list[str] = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC.parent).with_suffix("")
        here = node_of(".".join(relative.parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                private = any(part.startswith("_") for part in parts[2:])
                if parts[0] == "kosong" and private and node_of(name) != here:
                    found.append(f"{relative}: {name}")
    return found


def test_no_package_imports_another_packages_private_modules() -> None:
    assert private_imports_across_packages() == []
