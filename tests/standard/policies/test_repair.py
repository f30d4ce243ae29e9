"""RepairPolicy: malformed arguments repaired where the tool's schema leaves no doubt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kosong.message import ToolCall
from kosong.standard import RepairedArguments, error_code, to_envelope, with_policies
from kosong.standard.policies import (
    UNKNOWN_TOOL,
    ApprovalPolicy,
    ApprovalRequest,
    CachePolicy,
    EventHookPolicy,
    MetricsPolicy,
    RepairPolicy,
    RepeatGuardPolicy,
)
from kosong.testing import RecordingListener, ScriptedTool, make_call
from kosong.tooling import (
    UNPARSED,
    ArgumentLimits,
    HandleResult,
    Tool,
    ToolOk,
    ToolResult,
    Toolset,
    Unparsed,
)
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "all": {"type": "boolean"},
        "label": {"type": "string"},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "filter": {
            "type": "object",
            "properties": {
                "limit": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "additionalProperties": False,
        },
        "either": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "object"}]},
        "shape": {
            "oneOf": [
                {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
                {"type": "array", "items": {"type": "number"}},
            ]
        },
        "maybe": {"type": ["integer", "null"]},
        "point": {"$ref": "#/$defs/point"},
    },
    "required": ["count"],
    "additionalProperties": False,
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
}


def search(**metadata: Any) -> ScriptedTool:
    return ScriptedTool("search", ["found"], parameters=SCHEMA, **metadata)


def change(path: str, to: str, source: str = "string") -> JsonType:
    return {"path": path, "from": source, "to": to}


def dumps(value: JsonType) -> str:
    return json.dumps(value)


Repaired = tuple[str, dict[str, Any], list[JsonType]]
"""("repaired", what the tool gets, the changes listed in the metadata)."""

CASES: list[tuple[str, str, Repaired | tuple[str]]] = [
    # --- repaired: the schema says what was meant -----------------------------------------
    ("a number as a string", '{"count": "3"}',
     ("repaired", {"count": 3}, [change("$.count", "integer")])),
    ("a number with spaces around", '{"count": " 12 "}',
     ("repaired", {"count": 12}, [change("$.count", "integer")])),
    ("a fraction and an exponent", '{"count": 1, "ratio": "-2.5e-3"}',
     ("repaired", {"count": 1, "ratio": -0.0025}, [change("$.ratio", "number")])),
    ("a boolean as a string, any case", '{"count": 1, "all": "True"}',
     ("repaired", {"count": 1, "all": True}, [change("$.all", "boolean")])),
    ("an array as a JSON string", '{"count": 1, "ids": "[1, 2]"}',
     ("repaired", {"count": 1, "ids": [1, 2]}, [change("$.ids", "array")])),
    ("an object as a JSON string, with strings inside to repair",
     dumps({"count": 1, "filter": dumps({"limit": "5", "tags": dumps(["a"])})}),
     ("repaired", {"count": 1, "filter": {"limit": 5, "tags": ["a"]}},
      [change("$.filter", "object"), change("$.filter.limit", "integer"),
       change("$.filter.tags", "array")])),
    ("a nullable integer", '{"count": 1, "maybe": "7"}',
     ("repaired", {"count": 1, "maybe": 7}, [change("$.maybe", "integer")])),
    ("through a $ref", dumps({"count": 1, "point": dumps({"x": "1.5"})}),
     ("repaired", {"count": 1, "point": {"x": 1.5}},
      [change("$.point", "object"), change("$.point.x", "number")])),
    ("the one union branch that takes objects", dumps({"count": 1, "shape": dumps({"r": "2"})}),
     ("repaired", {"count": 1, "shape": {"r": 2}},
      [change("$.shape", "object"), change("$.shape.r", "integer")])),
    ("arguments in a markdown fence", '```json\n{"count": 2}\n```',
     ("repaired", {"count": 2}, [change("$", "json", "markdown_fence")])),
    ("a fence without a language, and a number inside", '```\n{"count": "2"}\n```',
     ("repaired", {"count": 2},
      [change("$", "json", "markdown_fence"), change("$.count", "integer")])),
    ("a sentence after the JSON", '{"count": 2}\nLet me know if you need more.',
     ("repaired", {"count": 2}, [change("$", "json", "trailing_text")])),
    ("a fence around JSON and a sentence", '```json\n{"count": 2} is what I send\n```',
     ("repaired", {"count": 2},
      [change("$", "json", "markdown_fence"), change("$", "json", "trailing_text")])),
    # --- refused: ambiguous, or not what the schema wants even once repaired ----------------
    ("a word for a number", '{"count": "three"}', ("refused",)),
    ("a fraction for an integer", '{"count": "3.5"}', ("refused",)),
    ("a number too large for a float", '{"count": 1, "ratio": "1e400"}', ("refused",)),
    ("a union that takes strings too", dumps({"count": 1, "either": dumps({"a": 1})}),
     ("refused",)),
    ("a number where a string is wanted", '{"count": 1, "label": 5}', ("refused",)),
    ("repaired, but still not valid", '{"count": "1", "extra": true}', ("refused",)),
    ("yes for a boolean", '{"count": 1, "all": "yes"}', ("refused",)),
    ("a comma-separated list", '{"count": 1, "ids": "1, 2"}', ("refused",)),
    ("a duplicate key in a JSON string",
     '{"count": 1, "filter": "{\\"limit\\": 1, \\"limit\\": 2}"}', ("refused",)),
    ("two JSON values", '{"count": 1}{"count": 2}', ("refused",)),
    ("a JSON value after the JSON", '{"count": 1} true', ("refused",)),
    ("text before the JSON", 'Here you go: {"count": 1}', ("refused",)),
    ("a fence around invalid arguments", '```json\n{"count": "x"}\n```', ("refused",)),
    ("NaN is not JSON, fenced or not", '```json\n{"count": NaN}\n```', ("refused",)),
    # --- left alone: nothing to repair ------------------------------------------------------
    ("valid arguments", '{"count": 1, "label": "42", "either": "abc"}', ("unchanged",)),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_malformed_arguments_get_the_verdict_of_the_table(
    raw: str, verdict: tuple[Any, ...]
) -> None:
    tool = search()
    listener = RecordingListener()
    pipeline = with_policies(SimpleToolset([tool]), EventHookPolicy(listener), RepairPolicy())
    result = await asyncio.wait_for(pipeline.handle(make_call("search", raw, call_id="c")), 5)
    assert result.tool_call_id == "c" and result.metadata is not None
    progress = [e.data["message"] for e in listener.events if e.event == "tool_progress"]
    if verdict[0] == "refused":
        assert error_code(result.return_value) == "INVALID_PARAMS" and tool.calls == 0
        assert "repairs" not in result.metadata and progress == []
        return
    assert result.return_value.output == "found"
    if verdict[0] == "unchanged":
        assert tool.arguments == [json.loads(raw)]
        assert "repairs" not in result.metadata and progress == []
        return
    _, got, changes = verdict
    assert tool.arguments == [got]
    assert result.metadata["repairs"] == changes
    assert to_envelope(result).dump()["metadata"]["repairs"] == changes
    (message,) = progress
    assert isinstance(message, str) and message.startswith("repaired the arguments: ")
    assert listener.kinds() == ["tool_progress", "tool_result"]


async def test_destructive_tools_are_repaired_only_when_configured() -> None:
    raw = '{"count": "3"}'
    for policy, runs in ((RepairPolicy(), False), (RepairPolicy(repair_destructive=True), True)):
        tool = search(destructive_hint=True)
        pipeline = with_policies(SimpleToolset([tool]), policy)
        result = await pipeline.handle(make_call("search", raw))
        assert (tool.calls == 1) is runs
        assert result.return_value.is_error is not runs


# --- a repaired call passes through every policy, as a well-formed call would ------------------


@pytest.mark.parametrize("raw", ['```json\n{"count": "3"}\n```', '{"count": "3"}'])
async def test_approval_on_either_side_is_asked_once_with_the_repaired_arguments(raw: str) -> None:
    asked: list[tuple[str, JsonType]] = []

    def hook(label: str):
        def decide(request: ApprovalRequest) -> bool:
            asked.append((label, request.arguments))
            return True

        return decide

    tool = search(destructive_hint=True)
    pipeline = with_policies(
        SimpleToolset([tool]),
        ApprovalPolicy(hook("outside")),
        RepairPolicy(repair_destructive=True),
        ApprovalPolicy(hook("inside")),
    )
    result = await pipeline.handle(make_call("search", raw))
    assert result.return_value.output == "found"
    assert asked == [("outside", {"count": 3}), ("inside", {"count": 3})]
    assert tool.arguments == [{"count": 3}]


async def test_a_repaired_call_and_the_well_formed_one_share_a_cache_entry() -> None:
    tool = search(read_only_hint=True, cacheable=True)
    pipeline = with_policies(SimpleToolset([tool]), CachePolicy(), RepairPolicy())
    fenced = await pipeline.handle(make_call("search", '```json\n{"count": "3"}\n```'))
    plain = await pipeline.handle(make_call("search", '{"count": 3}'))
    assert tool.calls == 1
    assert fenced.metadata is not None and fenced.metadata["repairs"]
    assert plain.metadata is not None and plain.metadata["cache"]["hit"] is True  # type: ignore[index]


async def test_the_repeat_guard_counts_a_repaired_call_as_the_same_call() -> None:
    tool = search()
    pipeline = with_policies(SimpleToolset([tool]), RepeatGuardPolicy(1), RepairPolicy())
    await pipeline.handle(make_call("search", '{"count": 3}'))
    again = await pipeline.handle(make_call("search", '{"count": "3"} ok?'))
    assert error_code(again.return_value) == "REPEATED_CALL" and tool.calls == 1


async def test_metrics_count_a_repaired_call_as_a_call_and_an_unrepairable_one_as_refused() -> None:
    metrics = MetricsPolicy()
    pipeline = with_policies(SimpleToolset([search()]), metrics, RepairPolicy())
    await pipeline.handle(make_call("search", '```\n{"count": 1}\n```'))
    await pipeline.handle(make_call("search", "not JSON at all"))
    await pipeline.handle(make_call("nope", "{}"))
    snapshot = metrics.registry.snapshot()
    assert snapshot["search"].calls == 2 and snapshot["search"].errors == 1
    assert snapshot[UNKNOWN_TOOL].calls == 1


class Plain:
    """A user's own toolset, which reads each call's argument text itself."""

    def __init__(self) -> None:
        self.texts: list[str | None] = []

    @property
    def tools(self) -> list[Tool]:
        return [Tool(name="search", description="Search.", parameters=SCHEMA)]

    def handle(self, tool_call: ToolCall) -> HandleResult:
        self.texts.append(tool_call.function.arguments)
        return ToolResult(tool_call.id, ToolOk(output="plain"))


async def test_a_core_that_reads_the_text_itself_gets_the_repaired_text() -> None:
    core = Plain()
    pipeline = with_policies(core, RepairPolicy())
    result = await pipeline.handle(make_call("search", '```json\n{"count": "3"}\n```'))
    assert result.return_value.output == "plain"
    assert core.texts == ['{"count":3}']


async def test_long_arguments_are_repaired_off_the_event_loop() -> None:
    tool = search()
    toolset = SimpleToolset([tool], limits=ArgumentLimits(offload_length=64))
    label = "x" * 200
    raw = f'```json\n{{"count": "9", "label": "{label}"}}\n```'
    result = await with_policies(toolset, RepairPolicy()).handle(make_call("search", raw))
    assert tool.arguments == [{"count": 9, "label": label}]
    assert result.metadata is not None and len(result.metadata["repairs"]) == 2  # type: ignore[arg-type]


async def test_a_repair_that_raises_leaves_the_call_as_it_was() -> None:
    class Broken(RepairPolicy):
        def repair(
            self,
            call: ToolCall,
            tool: Tool,
            arguments: JsonType | Unparsed,
            limits: ArgumentLimits,
        ) -> RepairedArguments | None:
            raise RuntimeError("broken")

    tool = search()
    pipeline = with_policies(SimpleToolset([tool]), Broken())
    fine = await pipeline.handle(make_call("search", '{"count": 1}'))
    bad = await pipeline.handle(make_call("search", '{"count": "1"}'))
    assert fine.return_value.output == "found"
    assert error_code(bad.return_value) == "INVALID_PARAMS" and tool.calls == 1


# --- properties ------------------------------------------------------------------------------

SIMPLE: dict[str, Any] = {
    "type": "object",
    "properties": {k: SCHEMA["properties"][k] for k in ("count", "ratio", "all", "ids", "filter")},
    "required": ["count"],
    "additionalProperties": False,
}
SIMPLE_TOOL = Tool(name="simple", description="Simple.", parameters=SIMPLE)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SIMPLE_ARGUMENTS = st.fixed_dictionaries(
    {"count": st.integers()},
    optional={
        "ratio": st.integers() | FLOATS,
        "all": st.booleans(),
        "ids": st.lists(st.integers(), max_size=4),
        "filter": st.fixed_dictionaries(
            {}, optional={"limit": st.integers(), "tags": st.lists(st.text(max_size=5))}
        ),
    },
)
"""Any arguments valid for SIMPLE."""
LIMITS = ArgumentLimits()


def _repair(arguments: JsonType | Unparsed, raw: str | None = None) -> RepairedArguments | None:
    call = make_call("simple", raw)
    return RepairPolicy().repair(call, SIMPLE_TOOL, arguments, LIMITS)


@given(arguments=SIMPLE_ARGUMENTS)
@settings(max_examples=100, deadline=None)
def test_valid_arguments_are_never_touched(arguments: dict[str, Any]) -> None:
    assert _repair(arguments) is None


@given(arguments=SIMPLE_ARGUMENTS, data=st.data())
@settings(max_examples=100, deadline=None)
def test_values_written_as_strings_are_repaired_back_to_themselves(
    arguments: dict[str, Any], data: st.DataObject
) -> None:
    keys = data.draw(st.sets(st.sampled_from(sorted(arguments))))
    sent = {k: json.dumps(v) if k in keys else v for k, v in arguments.items()}
    repaired = _repair(sent)
    if not keys:
        assert repaired is None
        return
    assert repaired is not None and repaired.arguments == arguments

    def kind(value: Any) -> str:
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, int):
            return "integer"
        return {float: "number", list: "array", dict: "object"}[type(value)]

    assert repaired.repairs == [
        change(f"$.{k}", kind(v)) for k, v in arguments.items() if k in keys
    ]


@given(arguments=SIMPLE_ARGUMENTS, language=st.sampled_from(["", "json", "JSON"]))
@settings(max_examples=50, deadline=None)
def test_any_valid_arguments_in_a_fence_are_read(arguments: dict[str, Any], language: str) -> None:
    raw = f"```{language}\n{json.dumps(arguments, indent=2)}\n```"
    repaired = _repair(UNPARSED, raw)
    assert repaired is not None and repaired.arguments == arguments
    assert repaired.repairs == [change("$", "json", "markdown_fence")]


@given(text=st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_whatever_the_text_a_repair_is_valid_or_absent(text: str) -> None:
    repaired = _repair(UNPARSED, text)
    if repaired is not None:
        import jsonschema_rs

        assert jsonschema_rs.validator_for(SIMPLE).is_valid(repaired.arguments)


def test_a_toolset_without_the_policy_repairs_nothing() -> None:
    async def run() -> ToolResult:
        tool = search()
        toolset: Toolset = SimpleToolset([tool])
        return await toolset.handle(make_call("search", '{"count": "3"}'))

    result = asyncio.run(run())
    assert error_code(result.return_value) == "INVALID_PARAMS"
