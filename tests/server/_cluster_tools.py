"""Tools for the tests of front ends and workers in separate processes.

Each side effect is counted by the tool itself, as a line appended to the file named by
`KOSONG_TEST_EFFECTS` (one `write` of a short line: whole lines, even from several processes
at once), so that the test sees every time a tool did its work, whatever process died.
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel

from kosong.standard import current_call, report_progress, with_policies
from kosong.standard.policies import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue, tool
from kosong.tooling.simple import SimpleToolset


def _effect(*words: object) -> None:
    line = (" ".join(str(w) for w in words) + "\n").encode()
    fd = os.open(os.environ["KOSONG_TEST_EFFECTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@tool
async def charge(order: str, delay: float = 0.5) -> str:
    """Charge an order: a side effect that must happen at most once."""
    report_progress(10, "charging")
    await asyncio.sleep(delay)
    _effect("charge", order, os.getpid())
    report_progress(90, "charged")
    await asyncio.sleep(delay)
    return f"charged {order}"


class ItemParams(BaseModel):
    item: str
    delay: float = 0.5


class Store(CallableTool2[ItemParams]):
    """Store an item: safe to repeat (the same item stored twice is stored once)."""

    name: str = "store"
    description: str = "Store an item (idempotent)."
    params: type[ItemParams] = ItemParams
    idempotent_hint = True

    async def __call__(self, params: ItemParams) -> ToolReturnValue:
        report_progress(10, "storing")
        await asyncio.sleep(params.delay)
        _effect("store", params.item, os.getpid())
        await asyncio.sleep(params.delay)
        return ToolOk(output=f"stored {params.item}")


@tool(sequential=True)
async def one_at_a_time(tag: str, delay: float = 0.2) -> str:
    """A sequential tool: records when each call starts and ends."""
    _effect("start", tag, asyncio.get_running_loop().time(), os.getpid())
    await asyncio.sleep(delay)
    _effect("end", tag, asyncio.get_running_loop().time(), os.getpid())
    return tag


class PathParams(BaseModel):
    path: str


class Delete(CallableTool2[PathParams]):
    """Delete a path: destructive, so someone must approve it first."""

    name: str = "delete"
    description: str = "Delete a path (destructive)."
    params: type[PathParams] = PathParams
    destructive_hint = True

    async def __call__(self, params: PathParams) -> ToolReturnValue:
        _effect("delete", params.path, os.getpid())
        return ToolOk(output=f"deleted {params.path}")


@tool
async def interview() -> str:
    """Ask the client's user their name, then its model for a line: it starts once."""
    _effect("interview", "started", os.getpid())
    call = current_call()
    assert call is not None
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await call.elicit("Your name?", schema)
    name = (answer.content or {}).get("name") if answer.action == "accept" else None
    line = await call.sample(f"A line for {name}.", max_tokens=20)
    return f"{name}: {line.extract_text()} (ran in {os.getpid()})"


def _ask(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.ask(f"may I delete {request.arguments}?")


tools = with_policies(
    SimpleToolset([charge, Store(), one_at_a_time, Delete(), interview]),
    ApprovalPolicy(_ask, ask_timeout=600),
)
