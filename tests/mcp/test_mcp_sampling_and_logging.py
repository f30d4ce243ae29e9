"""A served tool asks the client's model (`sample`) and logs to the client (`log`), in both eras.

Driven by clients nobody here wrote: the official SDK's `Client` in the handshake era
(2025-11-25: `sampling/createMessage` on the call's stream, `logging/setLevel`) and the
2026-07-28 era (sampling as an `input_required` round; log messages only for a request whose
`_meta["io.modelcontextprotocol/logLevel"]` asks, at or above that level, as the 2026-07-28
logging page says), and FastMCP's client; then kosong's own `MCPToolset`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncGenerator
from typing import Any

import mcp_types as mcp
import pytest
from fastmcp import Client as FastMCPClient
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from kosong.chat_provider.scripted import ScriptedChatProvider
from kosong.mcp import MCPToolServer, MCPToolset
from kosong.message import ToolCall
from kosong.standard import current_call
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset
from mcp import Client
from tests.mcp._mcp_servers import Uvicorn


@tool
async def haiku(topic: str) -> str:
    """A haiku by the client's model, with log messages on the way."""
    ctx = current_call()
    assert ctx is not None
    await ctx.log("debug", {"topic": topic})
    await ctx.log("info", f"asking for a haiku about {topic}")
    written = await ctx.sample(
        f"Write a haiku about {topic}.", system_prompt="Be brief.", max_tokens=60
    )
    await ctx.log("warning", "done", logger="poet")
    return written.extract_text()


@pytest.fixture
async def url() -> AsyncGenerator[str]:
    async with Uvicorn(MCPToolServer(SimpleToolset([haiku])).app()) as running:
        yield running.url


class Client_:
    """What a client was sent: sampling requests and log messages."""

    def __init__(self) -> None:
        self.sampled: list[mcp.CreateMessageRequestParams] = []
        self.logged: list[tuple[str, Any, str | None]] = []

    async def sample(
        self, context: ClientRequestContext, params: mcp.CreateMessageRequestParams
    ) -> mcp.CreateMessageResult:
        self.sampled.append(params)
        text = mcp.TextContent(text="tide pools / small worlds")
        return mcp.CreateMessageResult(role="assistant", content=text, model="client-model")

    async def log(self, params: mcp.LoggingMessageNotificationParams) -> None:
        self.logged.append((params.level, params.data, params.logger))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_served_tool_samples_and_logs_through_the_official_client(
    url: str, mode: str
) -> None:
    seen = Client_()
    # Each era's way to ask for log messages from "info" up.
    level: dict[str, Any] = {"log_level": "info"} if mode != "legacy" else {}
    async with Client(
        url, mode=mode, sampling_callback=seen.sample, logging_callback=seen.log, **level
    ) as client:
        if mode == "legacy":
            with warnings.catch_warnings():  # the SDK warns that 2026 deprecates setLevel
                warnings.simplefilter("ignore")
                await client.set_logging_level("info")
        result = await client.call_tool("haiku", {"topic": "tides"})
    assert result.content[0].text == "tide pools / small worlds"  # pyright: ignore[reportAttributeAccessIssue]
    params = seen.sampled[0]
    assert (params.system_prompt, params.max_tokens) == ("Be brief.", 60)
    assert params.messages[0].content.text == "Write a haiku about tides."  # pyright: ignore[reportAttributeAccessIssue]
    # "debug" is below the level asked for: not sent.
    assert seen.logged == [
        ("info", "asking for a haiku about tides", None),
        ("warning", "done", "poet"),
    ]


async def test_a_2026_request_that_asks_for_no_log_messages_gets_none(url: str) -> None:
    seen = Client_()
    async with Client(url, mode="2026-07-28", sampling_callback=seen.sample,
                      logging_callback=seen.log) as client:  # fmt: skip
        await client.call_tool("haiku", {"topic": "tides"})
    assert seen.sampled and seen.logged == []


async def test_logging_is_advertised_where_it_is_served(url: str) -> None:
    async with Client(url, mode="legacy") as legacy:
        assert legacy.server_capabilities.logging is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await legacy.set_logging_level("error")  # answered (an empty result)
    async with Client(url) as modern:  # negotiates 2026-07-28, asking `server/discover`
        # 2026-07-28: `logging` says log messages come when a request asks (its `_meta`);
        # `logging/setLevel` is no method of that version any more.
        assert modern.protocol_version == "2026-07-28"
        assert modern.server_capabilities.logging is not None
        with warnings.catch_warnings(), pytest.raises(MCPError) as refused:
            warnings.simplefilter("ignore")
            await modern.set_logging_level("error")
    assert refused.value.code == mcp.METHOD_NOT_FOUND


async def test_a_client_without_sampling_gets_the_tools_error_not_a_made_up_answer(
    url: str,
) -> None:
    for mode in ("legacy", "2026-07-28"):
        async with Client(url, mode=mode) as client:
            result = await client.call_tool("haiku", {"topic": "tides"})
        assert result.is_error
        assert "does not offer sampling" in result.content[0].text  # pyright: ignore[reportAttributeAccessIssue]


async def test_fastmcps_client_answers_a_served_tools_sampling_and_gets_its_logs(
    url: str,
) -> None:
    logged: list[tuple[str, Any]] = []

    async def sample(messages: Any, params: Any, context: Any) -> str:
        return f"fastmcp wrote about {messages[0].content.text}"

    async def log(message: Any) -> None:
        logged.append((message.level, message.data))

    # FastMCP's client asks every request for log messages from "debug" up (2026-07-28).
    async with FastMCPClient(url, sampling_handler=sample, log_handler=log) as client:
        result = await client.call_tool("haiku", {"topic": "tides"})
    assert result.content[0].text == "fastmcp wrote about Write a haiku about tides."  # pyright: ignore[reportAttributeAccessIssue]
    assert logged == [
        ("debug", {"topic": "tides"}),
        ("info", "asking for a haiku about tides"),
        ("warning", "done"),
    ]


async def test_mcp_toolset_answers_a_served_tools_sampling_with_the_users_model(
    url: str,
) -> None:
    users_model = ScriptedChatProvider([["tide pools"]])
    async with MCPToolset({"poet": url}, sampling=users_model) as toolset:
        body = ToolCall.FunctionBody(name="haiku", arguments='{"topic": "tides"}')
        result = await toolset.handle(ToolCall(id="c1", function=body))
    assert result.return_value.output == "tide pools"
    assert users_model.requests[0].system_prompt == "Be brief."


async def test_without_a_caller_a_log_goes_to_pythons_logging(caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="kosong.calls")
    from kosong.standard import PolicyToolset

    body = ToolCall.FunctionBody(name="haiku", arguments='{"topic": "tides"}')
    result = await PolicyToolset(SimpleToolset([haiku])).handle(ToolCall(id="c", function=body))
    assert result.return_value.is_error  # nobody to sample for it
    assert "nobody who made this call can sample" in result.return_value.message
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "kosong.calls"] == [
        ("DEBUG", "{'topic': 'tides'}"),
        ("INFO", "asking for a haiku about tides"),
    ]
