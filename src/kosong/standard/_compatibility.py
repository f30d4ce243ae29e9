"""Backward compatibility between two versions of a tool definition.

A new version is compatible when every call that was valid against the old one is still valid.

Breaking: a parameter removed or renamed; a parameter's type changed or narrowed; a new
required parameter; an optional parameter made required; enum values removed (or an enum
added); a constraint tightened (minimum raised, maxLength lowered, a pattern added...); an object
closed (`additionalProperties: false` where it was open); the tool renamed.

Compatible: a new optional parameter; a type widened (integer to number, null added); a
required parameter made optional; enum values added or the enum dropped; a constraint relaxed
or dropped; an object opened. Descriptions, titles and defaults are not compared.

`check_compatibility(old, new)` returns a `CompatibilityReport`: the changes found, each with
its JSON path and whether it breaks callers, plus the version bump they call for and whether the
declared versions (if any) make that bump. A new *required* parameter counts as breaking even
when it has a default, since a schema validator still rejects calls that leave it out; give it
a default and leave it optional.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kosong.tooling import Tool
from kosong.utils.dates_and_versions import parse_semver
from kosong.utils.jsonschema import deref_json_schema

__all__ = ["Change", "ChangeKind", "CompatibilityReport", "check_compatibility"]

ChangeKind = Literal[
    "tool_renamed",
    "parameter_removed",
    "parameter_renamed",
    "parameter_added_required",
    "parameter_added_optional",
    "became_required",
    "became_optional",
    "type_changed",
    "type_widened",
    "enum_narrowed",
    "enum_widened",
    "constraint_tightened",
    "constraint_relaxed",
    "object_closed",
    "object_opened",
]
"""The kinds of change the checker reports."""

Bump = Literal["major", "minor", "patch"]

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between the versions."""

    kind: ChangeKind
    """What changed."""
    path: str
    """Where, as a JSON path (`parameters.properties.location`)."""
    message: str
    """The change in words."""
    breaking: bool
    """Whether calls valid before may now fail."""


@dataclass(frozen=True, slots=True)
class CompatibilityReport:
    """What changed between two versions of a tool, and whether callers are affected."""

    tool_name: str
    """The tool (its old name)."""
    old_version: str | None
    """The old definition's version, if declared."""
    new_version: str | None
    """The new definition's version, if declared."""
    changes: list[Change] = field(default_factory=list[Change])
    """Every change found."""

    @property
    def compatible(self) -> bool:
        """True when no change breaks existing calls."""
        return not any(change.breaking for change in self.changes)

    @property
    def breaking(self) -> list[Change]:
        """The changes that break existing calls."""
        return [c for c in self.changes if c.breaking]

    @property
    def required_bump(self) -> Bump:
        """The semantic-version bump the changes call for."""
        if not self.compatible:
            return "major"
        return "minor" if self.changes else "patch"

    @property
    def version_bump_ok(self) -> bool | None:
        """Whether the declared versions make at least the required bump (None: undeclared)."""
        if self.old_version is None or self.new_version is None:
            return None
        old, new = parse_semver(self.old_version), parse_semver(self.new_version)
        if new.precedence_key() <= old.precedence_key():
            return False
        needed = self.required_bump
        if needed == "major":
            return new.major > old.major or (old.major == 0 and new.minor > old.minor)
        if needed == "minor":
            return (new.major, new.minor) > (old.major, old.minor)
        return True

    def __str__(self) -> str:
        verdict = "compatible" if self.compatible else "INCOMPATIBLE"
        versions = f" {self.old_version or '?'} -> {self.new_version or '?'}"
        lines = [f"{self.tool_name}{versions}: {verdict} (needs a {self.required_bump} bump)"]
        lines += [
            f"  {'BREAKING' if c.breaking else 'ok'}: {c.path}: {c.message}" for c in self.changes
        ]
        if self.version_bump_ok is False:
            lines.append("  the declared versions do not make the required bump")
        return "\n".join(lines)


def _definition(tool: Tool | Mapping[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    if isinstance(tool, Tool):
        return tool.name, tool.version, tool.parameters
    for key in ("parameters", "inputSchema", "input_schema"):
        schema = tool.get(key)
        if isinstance(schema, Mapping):
            break
    else:
        schema = {}
    version = tool.get("version")
    return (
        str(tool.get("name", "")),
        version if isinstance(version, str) else None,
        dict(cast(Mapping[str, Any], schema)),
    )


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    """The JSON types a schema accepts (None: any)."""
    type_ = schema.get("type")
    if isinstance(type_, str):
        types = {type_}
    elif isinstance(type_, list):
        types = {t for t in cast(list[Any], type_) if isinstance(t, str)}
    else:
        return None
    if "number" in types:
        types.add("integer")  # every integer is a number
    return types


def _comparable(schema: Any) -> Any:
    """A schema without its annotations, to spot a parameter that was only renamed."""
    if isinstance(schema, dict):
        return {
            k: _comparable(v)
            for k, v in cast(dict[str, Any], schema).items()
            if k not in ("description", "title", "examples", "default")
        }
    if isinstance(schema, list):
        return [_comparable(v) for v in cast(list[Any], schema)]
    return schema


class _Checker:
    def __init__(self) -> None:
        self.changes: list[Change] = []

    def add(self, kind: ChangeKind, path: str, message: str, breaking: bool) -> None:
        self.changes.append(Change(kind, path, message, breaking))

    def compare(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        self._types(old, new, path)
        self._enum(old, new, path)
        self._bounds(old, new, path)
        if "properties" in old or "properties" in new:
            self._object(old, new, path)
        old_items, new_items = old.get("items"), new.get("items")
        if isinstance(old_items, Mapping) and isinstance(new_items, Mapping):
            self.compare(cast(Mapping[str, Any], old_items), cast(Mapping[str, Any], new_items),
                         f"{path}.items")  # fmt: skip

    def _types(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        before, after = _types(old), _types(new)
        if before == after:
            return
        if after is None or (before is not None and before <= after):
            self.add("type_widened", path, f"type widened from {old.get('type')!r} to "
                     f"{new.get('type', 'any')!r}", False)  # fmt: skip
        else:
            self.add("type_changed", path, f"type changed from {old.get('type', 'any')!r} to "
                     f"{new.get('type')!r}", True)  # fmt: skip

    def _enum(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        before, after = old.get("enum"), new.get("enum")
        if after is None:
            if before is not None:
                self.add("enum_widened", path, "enum restriction removed", False)
            return
        after_list = cast(list[Any], after)
        if before is None:
            self.add("enum_narrowed", path, f"now restricted to {after_list!r}", True)
            return
        removed = [v for v in cast(list[Any], before) if v not in after_list]
        added = [v for v in after_list if v not in cast(list[Any], before)]
        if removed:
            self.add("enum_narrowed", path, f"enum values removed: {removed!r}", True)
        if added:
            self.add("enum_widened", path, f"enum values added: {added!r}", False)

    def _bounds(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        for keys, lower in ((_LOWER_BOUNDS, True), (_UPPER_BOUNDS, False)):
            for key in keys:
                before: Any = old.get(key)
                after: Any = new.get(key)
                if before == after:
                    continue
                if after is None:
                    self.add("constraint_relaxed", path, f"{key} {before!r} removed", False)
                elif before is None or (after > before if lower else after < before):
                    self.add("constraint_tightened", path, f"{key} {before!r} -> {after!r}", True)
                else:
                    self.add("constraint_relaxed", path, f"{key} {before!r} -> {after!r}", False)
        if old.get("pattern") != new.get("pattern"):
            if new.get("pattern") is None:
                self.add("constraint_relaxed", path, "pattern removed", False)
            else:
                self.add("constraint_tightened", path, f"pattern now {new.get('pattern')!r}", True)

    def _object(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        old_props = cast(dict[str, Any], old.get("properties") or {})
        new_props = cast(dict[str, Any], new.get("properties") or {})
        old_req = set(cast(list[str], old.get("required") or []))
        new_req = set(cast(list[str], new.get("required") or []))
        removed = [n for n in old_props if n not in new_props]
        added = [n for n in new_props if n not in old_props]
        for name in list(removed):
            twin = next(
                (a for a in added if _comparable(new_props[a]) == _comparable(old_props[name])),
                None,
            )
            if twin is not None:
                removed.remove(name)
                added.remove(twin)
                self.add("parameter_renamed", f"{path}.properties.{name}",
                         f"renamed to `{twin}`", True)  # fmt: skip
        for name in removed:
            self.add("parameter_removed", f"{path}.properties.{name}", "parameter removed", True)
        for name in added:
            where = f"{path}.properties.{name}"
            if name in new_req:
                has_default = isinstance(new_props[name], Mapping) and "default" in new_props[name]
                note = (
                    " (its default does not help: required means callers must send it)"
                    if has_default
                    else " without a default"
                )
                self.add("parameter_added_required", where, f"new required parameter{note}", True)
            else:
                self.add("parameter_added_optional", where, "new optional parameter", False)
        for name in old_props:
            if name not in new_props:
                continue
            where = f"{path}.properties.{name}"
            if name in new_req and name not in old_req:
                self.add("became_required", where, "optional parameter made required", True)
            elif name in old_req and name not in new_req:
                self.add("became_optional", where, "required parameter made optional", False)
            old_child, new_child = old_props[name], new_props[name]
            if isinstance(old_child, Mapping) and isinstance(new_child, Mapping):
                self.compare(
                    cast(Mapping[str, Any], old_child), cast(Mapping[str, Any], new_child), where
                )
        was_open = old.get("additionalProperties", True) is not False
        now_open = new.get("additionalProperties", True) is not False
        if was_open and not now_open:
            self.add("object_closed", path, "undeclared properties are now rejected", True)
        elif now_open and not was_open:
            self.add("object_opened", path, "undeclared properties are now accepted", False)


def check_compatibility(
    old: Tool | Mapping[str, Any], new: Tool | Mapping[str, Any]
) -> CompatibilityReport:
    """Compare two versions of a tool definition; see the module doc.

    Each may be a `Tool` or a definition dict (with `parameters`, MCP's `inputSchema` or
    Anthropic's `input_schema`). Local `$ref`s are inlined before comparing.
    """
    old_name, old_version, old_schema = _definition(old)
    new_name, new_version, new_schema = _definition(new)
    checker = _Checker()
    if old_name != new_name:
        checker.add("tool_renamed", "name", f"tool renamed from `{old_name}` to `{new_name}`", True)
    checker.compare(deref_json_schema(old_schema), deref_json_schema(new_schema), "parameters")
    return CompatibilityReport(old_name, old_version, new_version, checker.changes)
