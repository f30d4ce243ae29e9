"""The Berkeley Function Calling Leaderboard's functions against Gemini's rules.

Counts the distinct tools of BFCL v4 (every question file and the multi-turn function docs,
types mapped to JSON Schema as BFCL's own `GORILLA_TO_OPENAPI` maps them), the ones with a
shape users report Gemini's older OpenAPI `parameters` field refusing (no parameters at all,
a nested object without properties, a non-string enum, a `required` name that is not a
property), and what kosong's dialect check finds in each as the Gemini provider sends it
(`parametersJsonSchema`, after the safe fixes).

The data ships in the `bfcl-eval` package (not a dependency of kosong):

    pip download bfcl-eval==2026.3.23 --no-deps -d /tmp/bfcl
    unzip -q /tmp/bfcl/bfcl_eval-*.whl -d /tmp/bfcl/whl
    python benchmarks/bfcl_gemini.py /tmp/bfcl/whl
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from kosong.dialects import check_tools, fix_schema


def _tools(root: Path) -> list[dict[str, Any]]:
    data = root / "bfcl_eval" / "data"
    files = [p for p in data.glob("BFCL_v4_*.json") if "format_sensitivity" not in p.name]
    files += sorted((data / "multi_turn_func_doc").glob("*.json"))
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted(files):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            functions = entry.get("function", entry if "name" in entry else None)
            for function in [functions] if isinstance(functions, dict) else functions or []:
                seen[json.dumps(function, sort_keys=True)] = function
    return list(seen.values())


def _json_schema(function: dict[str, Any], types: dict[str, str]) -> dict[str, Any]:
    def cast(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, str):
                out[key] = types.get(value, value)
            elif key == "properties" and isinstance(value, dict):
                out[key] = {name: cast(sub) for name, sub in value.items()}
            elif key in ("items", "additionalProperties"):
                out[key] = cast(value)
            else:
                out[key] = value
        return out

    schema = cast(copy.deepcopy(function.get("parameters") or {}))
    schema["type"] = "object"
    return schema


def _old_shapes(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    if not schema.get("properties"):
        found.add("no parameters")

    def walk(node: Any, root: bool) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "object" and not root and not node.get("properties"):
            found.add("object without properties")
        if any(not isinstance(v, str) for v in node.get("enum", [])):
            found.add("non-string enum")
        required, properties = node.get("required"), node.get("properties") or {}
        if isinstance(required, list) and any(r not in properties for r in required):
            found.add("required name not a property")
        for sub in properties.values():
            walk(sub, False)
        for key in ("items", "additionalProperties"):
            walk(node.get(key), False)

    walk(schema, True)
    return found


def main(root: Path) -> None:
    sys.path.insert(0, str(root))
    mappings: Any = importlib.import_module("bfcl_eval.constants.type_mappings")
    types: dict[str, str] = mappings.GORILLA_TO_OPENAPI  # BFCL's own type names → JSON Schema

    tools = _tools(root)
    shapes: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    with_shape = rejected = 0
    for function in tools:
        schema = _json_schema(function, types)
        found = _old_shapes(schema)
        with_shape += bool(found)
        shapes.update(found)
        sent = fix_schema(schema, "gemini")
        report = check_tools([{"name": "t", "parameters": sent}], ["gemini"], include_ignored=False)
        rejected += bool(report.rejected)
        rules.update(f.rule for f in report.rejected)
    print(f"distinct tools: {len(tools)}")
    print(f"with a shape the OpenAPI `parameters` field refuses: {with_shape} {dict(shapes)}")
    print(f"rejected by Gemini's parametersJsonSchema rules: {rejected} {dict(rules)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
