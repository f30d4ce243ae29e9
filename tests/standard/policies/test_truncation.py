"""TruncationPolicy: long outputs cut, the rest served by the "read more" tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kosong.message import TextPart
from kosong.standard import decode_cursor, encode_cursor, error_code, to_envelope, with_policies
from kosong.standard.policies import MemoryContinuationStore, TruncationPolicy
from kosong.tooling import ToolError, ToolOk, ToolResult
from tests.standard._std_tools import Scripted, make_call, output_json, toolset


def document(text: str, **fields: Any) -> Scripted:
    return Scripted(lambda n: ToolOk(output=text, message="doc"), name="get_document", **fields)


async def read_all(pipeline: Any, first: ToolResult) -> tuple[str, list[dict[str, Any]]]:
    """Follow the continuations to the end; return the text read and each part's data."""
    parts = [json.loads(first.return_value.output)]  # type: ignore[arg-type]
    while parts[-1]["truncated"]:
        cursor = parts[-1]["truncation_info"]["continuation"]
        result = await pipeline.handle(make_call("read_more", {"cursor": cursor}))
        assert not result.return_value.is_error, result.return_value.message
        parts.append(json.loads(result.return_value.output))
    return "".join(p["content"] for p in parts), parts


async def test_the_standards_truncation_example() -> None:
    text = "第一章。" * 3750  # 15000 characters
    pipeline = with_policies(
        toolset(document(text)),
        TruncationPolicy(2000, summarize=lambda full: "该文档包含 15 个章节，主要讨论了..."),
    )
    result = await pipeline.handle(make_call("get_document", {}))
    data = to_envelope(result).dump()["data"]
    continuation = data["truncation_info"].pop("continuation")
    assert data == {
        "content": text[:2000],
        "truncated": True,
        "truncation_info": {
            "original_length": 15000,
            "returned_length": 2000,
            "summary": "该文档包含 15 个章节，主要讨论了...",
        },
    }
    assert (
        continuation in result.return_value.message and "read_more" in result.return_value.message
    )
    assert to_envelope(result).dump()["metadata"]["truncation"]["original_length"] == 15000


async def test_reading_on_returns_every_character_exactly_once() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    pipeline = with_policies(toolset(document(text)), TruncationPolicy(1000))
    first = await pipeline.handle(make_call("get_document", {}))
    read, parts = await read_all(pipeline, first)
    assert read == text
    assert [p["truncation_info"].get("offset", 0) for p in parts] == list(range(0, len(text), 1000))
    assert parts[-1]["truncated"] is False and "continuation" not in parts[-1]["truncation_info"]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=0, max_size=400), limit=st.integers(1, 50))
async def test_cutting_never_loses_data(text: str, limit: int) -> None:
    pipeline = with_policies(toolset(document(text)), TruncationPolicy(limit))
    first = await pipeline.handle(make_call("get_document", {}))
    if len(text) <= limit:
        assert first.return_value.output == text
        return
    read, _ = await read_all(pipeline, first)
    assert read == text


async def test_short_outputs_and_errors_pass_untouched() -> None:
    pipeline = with_policies(toolset(document("short")), TruncationPolicy(100))
    assert (await pipeline.handle(make_call("get_document", {}))).return_value.output == "short"
    failing = Scripted(lambda n: ToolError(message="failed", output="y" * 500), name="e")
    result = await with_policies(toolset(failing), TruncationPolicy(10)).handle(make_call("e", {}))
    assert result.return_value.is_error and result.return_value.output == "y" * 500


async def test_per_tool_limits_and_exemptions() -> None:
    text = "z" * 300
    pipeline = with_policies(
        toolset(document(text), Scripted(lambda n: ToolOk(output=text), name="raw")),
        TruncationPolicy(100, per_tool={"raw": None, "get_document": 250}),
    )
    assert (await pipeline.handle(make_call("raw", {}))).return_value.output == text
    cut = json.loads((await pipeline.handle(make_call("get_document", {}))).return_value.output)  # type: ignore[arg-type]
    assert cut["truncation_info"]["returned_length"] == 250


async def test_limits_in_tokens_use_the_standards_ratios() -> None:
    text = "word " * 400  # 2000 characters of plain text: about 500 tokens at 4 characters each
    pipeline = with_policies(toolset(document(text)), TruncationPolicy(100, unit="tokens"))
    cut = json.loads((await pipeline.handle(make_call("get_document", {}))).return_value.output)  # type: ignore[arg-type]
    assert cut["truncation_info"]["returned_length"] == 400


async def test_async_summaries_and_failing_summaries(caplog: pytest.LogCaptureFixture) -> None:
    async def summarize(text: str) -> str:
        return f"{len(text)} chars"

    pipeline = with_policies(toolset(document("a" * 50)), TruncationPolicy(10, summarize=summarize))
    cut = json.loads((await pipeline.handle(make_call("get_document", {}))).return_value.output)  # type: ignore[arg-type]
    assert cut["truncation_info"]["summary"] == "50 chars"

    def broken(text: str) -> str:
        raise RuntimeError("summarizer down")

    pipeline = with_policies(toolset(document("a" * 50)), TruncationPolicy(10, summarize=broken))
    cut = json.loads((await pipeline.handle(make_call("get_document", {}))).return_value.output)  # type: ignore[arg-type]
    assert "summary" not in cut["truncation_info"] and cut["truncated"] is True
    assert "summarizer down" in caplog.text


async def test_read_more_refuses_bad_or_expired_cursors() -> None:
    now = [0.0]
    store = MemoryContinuationStore(ttl=60, clock=lambda: now[0])
    pipeline = with_policies(toolset(document("b" * 50)), TruncationPolicy(10, store=store))
    bad = await pipeline.handle(make_call("read_more", {"cursor": "not base64!"}))
    assert error_code(bad.return_value) == "INVALID_PARAMS"
    missing = await pipeline.handle(make_call("read_more", {}))
    assert error_code(missing.return_value) == "INVALID_PARAMS"
    first = output_json(await pipeline.handle(make_call("get_document", {})))
    now[0] = 61
    expired = await pipeline.handle(
        make_call("read_more", {"cursor": first["truncation_info"]["continuation"]})
    )
    assert error_code(expired.return_value) == "RESOURCE_NOT_FOUND"
    assert "call the original tool again" in expired.return_value.message


def test_the_read_more_tool_is_listed_and_must_not_clash() -> None:
    pipeline = with_policies(toolset(document("x")), TruncationPolicy(10))
    read_more = pipeline.find_tool("read_more")
    assert read_more is not None and read_more.read_only_hint and read_more.idempotent_hint
    assert read_more.parameters["required"] == ["cursor"]
    with pytest.raises(ValueError, match="adds a tool named `read_more`, but the toolset already"):
        with_policies(toolset(Scripted(lambda n: ToolOk(), name="read_more")), TruncationPolicy(10))
    with pytest.raises(ValueError, match="at least 1"):
        TruncationPolicy(0)


async def test_the_store_keeps_only_its_newest_outputs() -> None:
    store = MemoryContinuationStore(max_entries=2)
    keys = [await store.put(str(i)) for i in range(3)]
    assert await store.get(keys[0]) is None
    assert [await store.get(k) for k in keys[1:]] == ["1", "2"]


def _tampered(cursor: str, **changes: Any) -> str:
    state = decode_cursor(cursor)
    state.update(changes)
    return encode_cursor(state)


async def test_a_forged_or_tampered_continuation_cursor_is_invalid_params_never_a_loop() -> None:
    text = "abcdefghij" * 10
    pipeline = with_policies(toolset(document(text)), TruncationPolicy(10))
    first = output_json(await pipeline.handle(make_call("get_document", {})))
    cursor = first["truncation_info"]["continuation"]
    state = decode_cursor(cursor)
    forged = [
        _tampered(cursor, offset=-10),  # would read the same part forever
        _tampered(cursor, offset=0),
        _tampered(cursor, limit=0),
        _tampered(cursor, limit=10**9),
        _tampered(cursor, key="someone-elses-output"),
        _tampered(cursor, sig="0" * 32),
        encode_cursor({k: v for k, v in state.items() if k != "sig"}),
        encode_cursor({"key": state["key"], "offset": 10, "limit": 10}),
        encode_cursor({**state, "offset": 10.5}),
        encode_cursor({**state, "offset": True}),
    ]
    for cursor_text in forged:
        result = await pipeline.handle(make_call("read_more", {"cursor": cursor_text}))
        assert error_code(result.return_value) == "INVALID_PARAMS", cursor_text
    # The genuine cursor still works, and following cursors always ends.
    whole, parts = await read_all(pipeline, await pipeline.handle(make_call("get_document", {})))
    assert whole == text and len(parts) == 10


async def test_cursors_signed_with_a_shared_secret_work_across_policies() -> None:
    store = MemoryContinuationStore()
    first_policy = TruncationPolicy(10, store=store, secret=b"shared")
    second_policy = TruncationPolicy(10, store=store, secret=b"shared")
    other_policy = TruncationPolicy(10, store=store)
    result = await with_policies(toolset(document("x" * 30)), first_policy).handle(
        make_call("get_document", {})
    )
    cursor = output_json(result)["truncation_info"]["continuation"]
    read = make_call("read_more", {"cursor": cursor})
    assert not (
        await with_policies(toolset(document("")), second_policy).handle(read)
    ).return_value.is_error
    refused = await with_policies(toolset(document("")), other_policy).handle(read)
    assert error_code(refused.return_value) == "INVALID_PARAMS"


async def test_truncation_cuts_only_text_outputs() -> None:
    parts = [TextPart(text="y" * 100)]
    tool = Scripted(lambda n: ToolOk(output=parts), name="get_document")
    result = await with_policies(toolset(tool), TruncationPolicy(10)).handle(
        make_call("get_document", {})
    )
    assert result.return_value.output == parts
