"""What a provider sends about each tool: made once per tool, kept while the tool is unchanged.

A provider turns a tool into its API's `tools` entry and checks it against the API's dialect
(`Described`). Both depend on the tool and the provider's class only, so they are made the
first time a tool is sent to that kind of provider and kept beside the tool: weakly (forgotten
with the tool), and made again when any of the tool's fields is set to another value. A tool
is read as it is when it is first sent: change one by setting a field, or make a new one
(`tool.model_copy(update=...)`), not by changing the dicts of its schema in place.

Each request gets its own copy of the entries (`Described.sent`), so what a caller does to a
request body never reaches the next request.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kosong.dialects import Dialect, Finding, check_tools
from kosong.tooling import Tool

__all__ = ["Described", "describe", "described"]


@dataclass(frozen=True, slots=True)
class Described:
    """One tool as a provider sends it: its entry, and what its dialect rejects in it."""

    entry: dict[str, Any]
    """The API's entry for the tool; never handed out (see `sent`)."""
    dialect: Dialect
    """The dialect the tool was checked against."""
    rejected: tuple[Finding, ...]
    """What the API would refuse in the tool (empty: it can be sent)."""

    def sent(self) -> dict[str, Any]:
        """A copy of the entry for one request."""
        return _fresh(self.entry)


def describe(sent: Tool, dialect: Dialect, entry: dict[str, Any]) -> Described:
    """`entry`, the tool `sent` as the API gets it (fixes applied), checked against `dialect`."""
    rejected = check_tools([sent], [dialect], include_ignored=False).findings
    return Described(entry, dialect, tuple(rejected))


def described(tool: Tool, provider: type, make: Callable[[Tool], Described]) -> Described:
    """`make(tool)`, made once per tool and `provider` class while the tool's fields stay put."""
    fields = tuple(vars(tool).values())  # the same objects while no field was set
    key = id(tool)
    record = _records.get(key)
    if record is None or record.fields != fields:
        record = _Record(tool, key, fields)
    made = record.made.get(provider)
    if made is None:
        made = record.made[provider] = make(tool)
    return made


class _Record:
    """What was made from one tool, by provider class, with the fields it was made from."""

    __slots__ = ("fields", "made", "tool")

    def __init__(self, tool: Tool, key: int, fields: tuple[Any, ...]) -> None:
        # The record holds the tool weakly: when the tool goes, so does its record (its id may
        # then be another tool's).
        self.tool = weakref.ref(tool, lambda ref: _forget(key, ref))
        self.fields = fields  # held, so no field's id is reused while it is compared
        self.made: dict[type, Described] = {}
        _records[key] = self


_records: dict[int, _Record] = {}
"""The records of the tools sent and still alive, by the tool's id."""


def _forget(key: int, ref: weakref.ref[Tool]) -> None:
    record = _records.get(key)
    if record is not None and record.tool is ref:
        del _records[key]


_SHARED = frozenset({str, int, float, bool, type(None)})
"""The JSON values that cannot change: shared by a copy rather than copied."""


def _fresh(value: Any) -> Any:
    """A copy of a JSON value: new dicts and lists (a schema's strings and numbers are shared)."""
    if type(value) is dict:
        mapping: dict[Any, Any] = value  # pyright: ignore[reportUnknownVariableType] (narrowed)
        copied = mapping.copy()  # one copy in C, then the containers in it
        for key, child in mapping.items():
            if type(child) not in _SHARED:
                copied[key] = _fresh(child)
        return copied
    if type(value) is list:
        items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
        copied_items = items.copy()
        for index, child in enumerate(items):
            if type(child) not in _SHARED:
                copied_items[index] = _fresh(child)
        return copied_items
    return copy.deepcopy(value)  # anything else a schema may hold (a tuple, a dict subclass)
