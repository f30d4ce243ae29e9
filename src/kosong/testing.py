"""Test doubles for testing your own tools, toolsets and agents.

- `make_call(name, arguments)`: a `ToolCall` from a tool name and a dict (or raw text).
- `ScriptedTool`: a tool that answers each call with the next step of a script (values,
  exceptions, awaitables, or a function of the call number), records the arguments it got,
  and can make calls wait until you release them.
- `RecordingListener`: an event listener (for `EventHookPolicy`) that keeps every event.

```python
import asyncio
from kosong.testing import ScriptedTool, make_call
from kosong.tooling import ToolOk
from kosong.tooling.simple import SimpleToolset

async def main() -> None:
    lookup = ScriptedTool("lookup", [ToolOk(output="first"), RuntimeError("down")])
    toolset = SimpleToolset([lookup])
    print((await toolset.handle(make_call("lookup", {"q": "a"}))).return_value.output)
    print((await toolset.handle(make_call("lookup", {"q": "b"}))).return_value.message)
    print(lookup.arguments)

asyncio.run(main())
# first
# Error running tool: RuntimeError: down
# [{'q': 'a'}, {'q': 'b'}]
```
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from pydantic import Field, PrivateAttr

from kosong.message import ToolCall
from kosong.standard import ToolEvent
from kosong.tooling import CallableTool, ParametersType, ToolOk, ToolReturnValue
from kosong.utils.typing import JsonType

__all__ = ["RecordingListener", "ScriptedTool", "make_call"]

_call_ids = itertools.count(1)


def make_call(
    name: str, arguments: JsonType | str = None, call_id: str | None = None, **extras: JsonType
) -> ToolCall:
    """A `ToolCall` to `name`; `arguments` is JSON-encoded unless it is text already.

    `None` sends no arguments at all; `call_id` defaults to a new `call-<n>`; `extras` become
    the call's extras (say `trace_id="..."`).
    """
    text = arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
    return ToolCall(
        id=call_id if call_id is not None else f"call-{next(_call_ids)}",
        function=ToolCall.FunctionBody(name=name, arguments=text),
        extras=extras or None,
    )


Step = ToolReturnValue | BaseException | str | Callable[[], Any]
"""One step of a script: a value to return (a str becomes `ToolOk(output=...)`), an exception
to raise, or a function called for the answer (it may return an awaitable)."""


class ScriptedTool(CallableTool):
    """A tool that answers its n-th call with the n-th step of its script.

    `script` is a sequence of steps (see `Step`), or a function of the call number (0, 1...)
    returning a step. Once a sequence runs out, its last step repeats. The tool takes any JSON
    object; `arguments` lists what each call got. With `gated=True` every call waits, after
    being recorded, until `release()`: a test can then hold calls in flight.
    """

    parameters: ParametersType = Field(default_factory=lambda: {"type": "object"})

    _script: Callable[[int], Step] = PrivateAttr()
    _arguments: list[dict[str, Any]] = PrivateAttr(default_factory=list[dict[str, Any]])
    _gate: asyncio.Event | None = PrivateAttr(default=None)
    _entered: asyncio.Condition | None = PrivateAttr(default=None)

    def __init__(
        self,
        name: str,
        script: Sequence[Step] | Callable[[int], Step],
        *,
        description: str = "A scripted test tool",
        gated: bool = False,
        **metadata: Any,
    ) -> None:
        """Make the tool; `metadata` are `Tool` fields (`read_only_hint=True`, ...)."""
        super().__init__(name=name, description=description, **metadata)
        if callable(script):
            self._script = script
        else:
            steps = list(script)
            if not steps:
                raise ValueError("a script needs at least one step")
            self._script = lambda n: steps[min(n, len(steps) - 1)]
        self._gate = asyncio.Event() if gated else None

    @property
    def arguments(self) -> list[dict[str, Any]]:
        """The arguments of every call so far, in order."""
        return self._arguments

    @property
    def calls(self) -> int:
        """How many calls reached the tool."""
        return len(self._arguments)

    def release(self) -> None:
        """Let gated calls (and every later one) go on."""
        if self._gate is not None:
            self._gate.set()

    async def wait_calls(self, n: int) -> None:
        """Wait until `n` calls have reached the tool."""
        if self._entered is None:
            self._entered = asyncio.Condition()
        async with self._entered:
            await self._entered.wait_for(lambda: self.calls >= n)

    async def __call__(self, **arguments: Any) -> ToolReturnValue:
        """Record the call, wait at the gate if any, then play the next step."""
        n = len(self._arguments)
        self._arguments.append(arguments)
        if self._entered is not None:
            async with self._entered:
                self._entered.notify_all()
        if self._gate is not None:
            await self._gate.wait()
        step: Any = self._script(n)
        if callable(step) and not isinstance(step, type):  # a function, not an exception class
            step = step()
        if inspect.isawaitable(step):
            step = await step
        if isinstance(step, BaseException) or (
            isinstance(step, type) and issubclass(step, BaseException)
        ):
            raise step
        if isinstance(step, str):
            return ToolOk(output=step)
        return cast(ToolReturnValue, step)  # anything else is checked by the toolset


class RecordingListener:
    """An event listener that keeps every event it gets (pass it to `EventHookPolicy`)."""

    def __init__(self) -> None:
        """Start with no events."""
        self.events: list[ToolEvent] = []
        """Every event, in the order received."""

    def __call__(self, event: ToolEvent) -> None:
        """Keep `event`."""
        self.events.append(event)

    def kinds(self, tool_call_id: str | None = None) -> list[str]:
        """The kinds of the events (of one call, if given), in order."""
        return [event.event for event in self.of(tool_call_id)]

    def of(self, tool_call_id: str | None) -> list[ToolEvent]:
        """The events of one call (all events for None)."""
        if tool_call_id is None:
            return list(self.events)
        return [e for e in self.events if _call_id(e) == tool_call_id]

    def finals(self, tool_call_ids: Iterable[str] | None = None) -> list[ToolEvent]:
        """The final events (of these calls, if given)."""
        wanted = None if tool_call_ids is None else set(tool_call_ids)
        return [e for e in self.events if e.is_final and (wanted is None or _call_id(e) in wanted)]


def _call_id(event: ToolEvent) -> object:
    metadata = event.data.get("metadata")
    return metadata.get("tool_call_id") if isinstance(metadata, dict) else None
