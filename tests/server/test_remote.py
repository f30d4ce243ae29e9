"""`RemoteToolset` over a real server, through a proxy that cuts connections for real."""

from __future__ import annotations

import asyncio
import contextlib
import json

from kosong.message import ToolCall
from kosong.remote import RemoteToolset
from kosong.server import ServerConfig, create_app, serving
from kosong.standard import report_progress, with_policies
from kosong.standard.policies import MetricsPolicy
from kosong.tooling import tool
from tests._waiting import until
from tests.server._proxy import Proxy
from tests.server._tools import GATES, STARTED, tools


def _call(name: str, arguments: dict[str, object], call_id: str = "c1") -> ToolCall:
    return ToolCall(
        id=call_id, function=ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments))
    )


async def test_remote_tools_are_listed_and_called_as_if_local() -> None:
    async with serving(create_app(tools)) as url, RemoteToolset(url) as remote:
        assert [t.name for t in remote.tools] == [t.name for t in tools]
        version = remote.tools_version
        shown = remote.prefixed("r_")  # a wrapper follows each refresh through the version
        listed = shown.tools
        assert [t.name for t in listed] == [f"r_{t.name}" for t in tools]
        await remote.refresh()
        assert remote.tools_version != version
        assert shown.tools == listed and shown.tools[0] is not listed[0]  # the new definitions
        result = await remote.handle(_call("add", {"a": 1, "b": 2}))
        invalid = await remote.handle(_call("add", {"a": "x"}))
        missing = await remote.handle(_call("nope", {}))
    assert result.tool_call_id == "c1" and result.return_value.output == "3"
    assert invalid.return_value.is_error and "valid integer" in invalid.return_value.message
    assert missing.return_value.is_error and "nope" in missing.return_value.message


async def test_remote_progress_reaches_the_local_pipeline_events() -> None:
    async with serving(create_app(tools)) as url, RemoteToolset(url) as remote:
        pipeline = with_policies(remote, MetricsPolicy())
        async with pipeline.stream(_call("count", {"n": 3, "delay": 0})) as events:
            seen = [(e.event, e.data.get("progress")) async for e in events]
    assert seen[:3] == [
        ("tool_progress", 100 / 3),
        ("tool_progress", 200 / 3),
        ("tool_progress", 100),
    ]
    assert seen[-1][0] == "tool_result"


async def test_remote_progress_without_a_percentage_stays_without_one() -> None:
    @tool
    async def crawl(pages: int) -> str:
        """Crawl, not knowing how far it is."""
        for page in range(pages):
            report_progress(None, f"page {page + 1}")
            await asyncio.sleep(0)
        return "crawled"

    call = _call("crawl", {"pages": 2})
    async with (
        serving(create_app([crawl])) as url,
        RemoteToolset(url) as remote,
        with_policies(remote, MetricsPolicy()).stream(call) as events,
    ):
        seen = [{k: v for k, v in e.data.items() if k != "metadata"} async for e in events]
    assert seen[:2] == [{"message": "page 1"}, {"message": "page 2"}]
    assert seen[2]["data"] == "crawled"


async def test_a_dropped_connection_is_resumed_without_running_the_tool_twice() -> None:
    GATES["remote"] = asyncio.Event()
    STARTED["remote"] = asyncio.Event()
    app = create_app(tools, ServerConfig(retry_ms=10))
    async with serving(app) as url:
        proxy = Proxy(int(url.rpartition(":")[2]))
        async with proxy.running() as proxied, RemoteToolset(proxied) as remote:
            pipeline = with_policies(remote, MetricsPolicy())
            seen: list[str] = []
            result = None
            async with pipeline.stream(_call("gated", {"name": "remote", "steps": 2})) as events:
                async for event in events:
                    seen.append(event.event)
                    if len(seen) == 2:
                        proxy.cut()  # the connection drops for real, mid-run
                        GATES["remote"].set()
                    result = event.result
    assert seen == ["tool_progress", "tool_progress", "tool_progress", "tool_result"]
    assert result is not None and result.return_value.output == "opened remote"


async def test_an_unreachable_server_is_a_network_error_result() -> None:
    async with serving(create_app(tools)) as url:
        remote = await RemoteToolset.connect(url, reconnects=0)
    # The server is gone: its tools are listed here, but a call cannot reach it.
    result = await remote.handle(_call("add", {"a": 1, "b": 2}))
    await remote.aclose()
    assert result.return_value.is_error and "NETWORK_ERROR" in json.dumps(
        result.return_value.extras
    )


async def test_cancelling_a_remote_call_cancels_the_run() -> None:
    GATES["remote-cancel"] = asyncio.Event()
    STARTED["remote-cancel"] = asyncio.Event()
    from tests.server._tools import CANCELLED

    app = create_app(tools, ServerConfig(token="t"))
    async with serving(app) as url, RemoteToolset(url, token="t") as remote:
        task = remote.handle(_call("gated", {"name": "remote-cancel"}))
        await asyncio.wait_for(STARTED["remote-cancel"].wait(), 5)
        await asyncio.sleep(0.05)
        assert isinstance(task, asyncio.Task)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await until(lambda: "remote-cancel" in CANCELLED, "the run to be cancelled")
    assert "remote-cancel" in CANCELLED
