"""Properties of `CallableTool.call` for random object schemas and random JSON arguments.

For any object schema drawn from a small JSON Schema subset and any JSON value, `call` never
raises, returns `ToolOk` exactly when jsonschema_rs accepts the value, and then hands the body
exactly the object's properties as keyword arguments.
"""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import PrivateAttr

from kosong.tooling import CallableTool, ParametersType, ToolOk
from kosong.tooling.error import ToolValidateError

# Names a model may well send, and names that are awkward as Python keyword arguments: "self"
# (the bodies below take `self` positional-only, so it can also be a keyword), "args",
# "kwargs", "$ref", not identifiers at all, not ASCII, empty.
PROPERTY_NAMES = ["a", "b", "title", "self", "args", "kwargs", "$ref", "with space", "ключ", ""]
SIMPLE_TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]

NAMES = st.sampled_from(PROPERTY_NAMES)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
KEYS = NAMES | st.text(max_size=4)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
# Any JSON value, and (to reach valid arguments often) objects keyed by the schemas' names.
ARGUMENTS = JSON_VALUES | st.dictionaries(NAMES, JSON_VALUES, max_size=5)


@st.composite
def property_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(SIMPLE_TYPES))
    schema: dict[str, Any] = {"type": kind}
    if kind == "array" and draw(st.booleans()):
        schema["items"] = {"type": draw(st.sampled_from(SIMPLE_TYPES))}
    return schema


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """`{"type": "object"}` with some properties, a subset of them required (now and then a
    required name the schema does not describe), and additionalProperties true, false or unset."""
    names = draw(st.lists(NAMES, unique=True, max_size=4))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: draw(property_schemas()) for name in names},
    }
    required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if draw(st.integers(0, 9)) == 9:
        required.append("undeclared")
    if required:
        schema["required"] = required
    additional = draw(st.sampled_from([None, True, False]))
    if additional is not None:
        schema["additionalProperties"] = additional
    return schema


_VALUES_OF_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=6),
    "integer": st.integers() | st.integers(-(2**53), 2**53).map(float),  # 3.0 is an integer
    "number": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "null": st.none(),
    "array": st.lists(JSON_VALUES, max_size=3),
    "object": st.dictionaries(KEYS, JSON_VALUES, max_size=3),
}


@st.composite
def near_valid_objects(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """Objects close to `schema`: each property gets a value of its type, now and then any
    value; properties are left out or undeclared ones added now and then."""
    out: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        if draw(st.integers(0, 9)) == 9:
            continue
        if draw(st.integers(0, 9)) == 9:
            out[name] = draw(JSON_VALUES)
        elif prop["type"] == "array" and "items" in prop:
            out[name] = draw(st.lists(_VALUES_OF_TYPE[prop["items"]["type"]], max_size=3))
        else:
            out[name] = draw(_VALUES_OF_TYPE[prop["type"]])
    if draw(st.integers(0, 9)) == 9:
        out[draw(KEYS)] = draw(JSON_VALUES)
    return out


class AsyncEcho(CallableTool):
    """Takes any keyword arguments (`self` positional-only) and echoes them."""

    name: str = "async_echo"
    description: str = "Echo the arguments."
    parameters: ParametersType = {"type": "object"}
    _received: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def received(self) -> list[dict[str, Any]]:
        """The keyword arguments of each run of the body."""
        return self._received

    async def __call__(self, /, **kwargs: Any) -> ToolOk:
        self._received.append(kwargs)
        return ToolOk(output="echoed", extras={"arguments": kwargs})


class SyncEcho(CallableTool):
    """The same with a plain `def`: it runs in a worker thread after a signature check."""

    name: str = "sync_echo"
    description: str = "Echo the arguments."
    parameters: ParametersType = {"type": "object"}
    _received: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def received(self) -> list[dict[str, Any]]:
        """The keyword arguments of each run of the body."""
        return self._received

    def __call__(self, /, **kwargs: Any) -> ToolOk:  # pyright: ignore[reportIncompatibleMethodOverride]
        self._received.append(kwargs)
        return ToolOk(output="echoed", extras={"arguments": kwargs})


@pytest.mark.parametrize("tool_class", [AsyncEcho, SyncEcho])
@settings(max_examples=120, deadline=None)
@given(schema=object_schemas(), data=st.data())
async def test_call_returns_tool_ok_exactly_when_the_schema_accepts_and_passes_the_object_as_kwargs(
    tool_class: type[AsyncEcho | SyncEcho], schema: dict[str, Any], data: st.DataObject
) -> None:
    # Rare choices are the largest integer: hypothesis favours small ones (0 most of all).
    near = data.draw(st.integers(0, 3), label="near") < 3  # an object close to the schema
    arguments = data.draw(near_valid_objects(schema) if near else ARGUMENTS, label="arguments")
    tool = tool_class(parameters=schema)
    valid = jsonschema_rs.validator_for(schema).is_valid(arguments)
    event("valid" if valid else "invalid")  # both are common (see --hypothesis-show-statistics)
    result = await asyncio.wait_for(tool.call(arguments), timeout=10)  # never raises
    if valid:
        assert isinstance(result, ToolOk), result
        assert tool.received == [arguments]
        assert result.extras == {"arguments": arguments}
    else:
        assert isinstance(result, ToolValidateError), result
        assert result.message
        assert tool.received == []
