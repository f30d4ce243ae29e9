"""`kosong serve` serving a composed toolset, started as users start it, called by real clients."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from kosong.message import ToolCall
from kosong.remote import RemoteToolset
from tests.server._procs import ServerProcess

pytestmark = pytest.mark.external  # `kosong serve` processes

COMPOSED = '''
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def delete_everything() -> str:
    """Must never be reachable through the served toolset."""
    return "deleted"


@tool
def upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


toolset = (
    SimpleToolset([add, delete_everything])
    .filtered(["add"])
    .prefixed("math_")
    .combined(SimpleToolset([upper]).renamed({"upper": "shout"}))
)
'''


def _call(name: str, arguments: dict[str, object]) -> ToolCall:
    return ToolCall(
        id="c1", function=ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments))
    )


async def test_kosong_serve_serves_a_filtered_prefixed_renamed_combined_toolset(
    tmp_path: Path,
) -> None:
    (tmp_path / "composed.py").write_text(COMPOSED)
    server = ServerProcess(target=f"{tmp_path / 'composed.py'}:toolset")
    try:
        async with RemoteToolset(server.url) as remote:
            listed = [tool.name for tool in remote.tools]
            added = await remote.handle(_call("math_add", {"a": 2, "b": 3}))
            shouted = await remote.handle(_call("shout", {"text": "hi"}))
            # The remote toolset composes too: its calls still carry the parsed arguments.
            local = remote.prefixed("srv_")
            again = await local.handle(_call("srv_math_add", {"a": 4, "b": 5}))
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            hidden = await client.post("/tools/math_delete_everything", json={})
            bare = await client.post("/tools/add", json={"a": 1, "b": 1})
    finally:
        server.kill()
    assert listed == ["math_add", "shout"]
    assert added.return_value.output == "5" and added.tool_call_id == "c1"
    assert shouted.return_value.output == "HI"
    assert again.return_value.output == "9" and again.tool_call_id == "c1"
    for refused in (hidden, bare):
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "TOOL_NOT_FOUND"
