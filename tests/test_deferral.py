"""Deferred calls: agent_loop stops for a person or for its caller, and resumes later.

Real toolsets and policies (a `SimpleToolset` behind `ApprovalPolicy`), the scripted model;
the state crosses a process boundary as JSON text, as a web app would keep it.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from kosong import AgentState, Approve, DeferredCall, Deny, OutputRetriesExhausted, agent_loop
from kosong.chat_provider.scripted import ScriptedChatProvider, call
from kosong.message import Message, ToolCall
from kosong.standard import error_code, with_policies
from kosong.standard.policies import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from kosong.tooling import Tool, ToolOk, ToolResult, WrapperToolset, tool
from kosong.tooling.error import ToolDeferredError, ToolPermissionDeniedError
from kosong.tooling.simple import SimpleToolset
from kosong.utils.typing import JsonType

USER = [Message(role="user", content="tidy up")]


class Choice(BaseModel):
    """The structured answer of a run that also waits for its caller."""

    color: str


ROOT = Path(__file__).resolve().parents[1]


class Recording(WrapperToolset):
    """The calls that reached the tools, with their extras (the idempotency key)."""

    def __init__(self, wrapped: Any) -> None:
        super().__init__(wrapped)
        self.calls: list[ToolCall] = []

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        self.calls.append(call)
        return await super().call_tool(call, tool, arguments)


deleted: list[str] = []


@tool(destructive_hint=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@tool(read_only_hint=True)
def list_files() -> list[str]:
    """List the files."""
    return ["a.txt", "b.txt"]


@tool(external=True)
def pick_color(hint: str) -> str:
    """Ask the user, in the browser, to pick a color."""
    raise AssertionError("an external tool's body never runs")


def defer(request: ApprovalRequest) -> ApprovalDecision:
    arguments = request.arguments
    assert isinstance(arguments, dict)
    return ApprovalDecision.defer(f"Delete {arguments['path']}?")


class Pipeline(WrapperToolset):
    """The served pipeline, approval outside; `calls`: those that got past it to the tools."""

    def __init__(self) -> None:
        self.inner = Recording(SimpleToolset([delete_file, list_files, pick_color]))
        super().__init__(with_policies(self.inner, ApprovalPolicy(defer)))

    @property
    def calls(self) -> list[ToolCall]:
        return self.inner.calls


def toolset() -> Pipeline:
    deleted.clear()
    return Pipeline()


def tool_texts(history: Sequence[Message]) -> list[str]:
    return [f"{m.tool_call_id}={m.extract_text()}" for m in history if m.role == "tool"]


async def test_deferred_approval_stops_after_the_other_calls_and_resume_runs_it_once() -> None:
    tools = toolset()
    first = ScriptedChatProvider(
        [[call("list_files", {}), call("delete_file", {"path": "a.txt"}, id="d1")]]
    )
    stopped = await agent_loop(first, "sys", tools, USER)
    assert stopped.stop_reason == "deferred"
    assert stopped.deferred == [
        DeferredCall("d1", "delete_file", {"path": "a.txt"}, "Delete a.txt?", "approval")
    ]
    assert deleted == [] and [c.function.name for c in tools.calls] == ["list_files"]
    # The waiting step's answer, then the results of its calls that did not wait.
    assert [m.role for m in stopped.messages] == ["assistant", "tool"]
    assert stopped.state is not None
    text = stopped.state.dump()
    json.loads(text)  # plain JSON

    resumed_model = ScriptedChatProvider([tool_texts])
    state = AgentState.load(text)
    done = await agent_loop(
        resumed_model, "sys", tools, USER, resume=state, answers={"d1": Approve()}
    )
    assert done.stop_reason == "answered"
    assert deleted == ["a.txt"]  # once, and list_files did not run again
    assert [c.function.name for c in tools.calls] == ["list_files", "delete_file"]
    key = (tools.calls[1].extras or {}).get("idempotency_key")
    assert isinstance(key, str) and key == state.waiting[0].key
    # The model sees one result per call it made, in call order.
    sent = resumed_model.requests[0].history
    assert [m.role for m in sent] == ["user", "assistant", "tool", "tool"]
    assert tool_texts(sent) == ['call_0_1=["a.txt","b.txt"]', "d1=deleted a.txt"]
    assert [m.role for m in done.messages] == ["assistant", "tool", "tool", "assistant"]


async def test_a_denied_call_gets_permission_denied_and_never_runs() -> None:
    tools = toolset()
    first = ScriptedChatProvider([[call("delete_file", {"path": "b.txt"}, id="d1")]])
    stopped = await agent_loop(first, "", tools, USER)
    assert stopped.state is not None
    model = ScriptedChatProvider([tool_texts])
    done = await agent_loop(
        model, "", tools, USER, resume=stopped.state, answers={"d1": Deny("not on a Friday")}
    )
    assert deleted == [] and tools.calls == []
    assert done.answer.startswith("d1=ERROR: Permission denied for tool `delete_file`")
    assert "not on a Friday" in done.answer
    result = done.steps[0]
    assert isinstance((await result.tool_results())[0].return_value, ToolPermissionDeniedError)


async def test_an_external_tool_is_validated_then_deferred_and_its_callers_result_is_used() -> None:
    tools = toolset()
    first = ScriptedChatProvider(
        [[call("pick_color", {"hint": 3})], [call("pick_color", {"hint": "warm"}, id="p1")]]
    )
    stopped = await agent_loop(first, "", tools, USER)
    # The invalid call went back to the model as usual; the valid one waits for the caller.
    assert stopped.stop_reason == "deferred" and len(stopped.steps) == 2
    assert stopped.deferred == [DeferredCall("p1", "pick_color", {"hint": "warm"}, "", "external")]
    assert stopped.state is not None
    model = ScriptedChatProvider([tool_texts])
    done = await agent_loop(
        model, "", tools, USER, resume=stopped.state, answers={"p1": ToolOk(output="amber")}
    )
    assert done.answer.endswith("p1=amber")
    assert len(done.messages) == 5  # both steps, each with its one tool message, and the answer


async def test_a_destructive_external_tool_asks_first_then_waits_for_its_caller() -> None:
    @tool(external=True, destructive_hint=True)
    def wipe_screen() -> str:
        """Wipe the user's screen."""
        raise AssertionError("never runs here")

    tools = with_policies(
        SimpleToolset([wipe_screen]), ApprovalPolicy(lambda r: ApprovalDecision.defer("Wipe?"))
    )
    first = ScriptedChatProvider([[call("wipe_screen", {}, id="w")]])
    asked = await agent_loop(first, "", tools, USER)
    assert [d.kind for d in asked.deferred] == ["approval"] and asked.state is not None
    approved = await agent_loop(
        ScriptedChatProvider([]), "", tools, USER, resume=asked.state, answers={"w": Approve()}
    )
    assert approved.stop_reason == "deferred"
    assert [d.kind for d in approved.deferred] == ["external"] and approved.state is not None
    # The same key, whichever answer moved it on.
    assert approved.state.waiting[0].key == asked.state.waiting[0].key
    done = await agent_loop(
        ScriptedChatProvider([tool_texts]),
        "",
        tools,
        USER,
        resume=approved.state,
        answers={"w": ToolOk(output="wiped")},
    )
    assert done.answer == "w=wiped"


async def test_missing_unknown_or_wrong_answers_are_clear_errors_before_anything_is_sent() -> None:
    tools = toolset()
    first = ScriptedChatProvider(
        [[call("delete_file", {"path": "a"}, id="d1"), call("pick_color", {"hint": "x"}, id="p1")]]
    )
    stopped = await agent_loop(first, "", tools, USER)
    state = stopped.state
    assert state is not None and [d.kind for d in stopped.deferred] == ["approval", "external"]
    model = ScriptedChatProvider([["never sent"]])
    cases: list[tuple[dict[str, Any], str]] = [
        ({"d1": Approve()}, 'no answer for the deferred call "p1" (pick_color, external)'),
        ({"d1": Approve(), "p1": ToolOk(), "zz": Approve()}, 'does not wait on: ["zz"]'),
        ({"d1": ToolOk(), "p1": ToolOk()}, "waits for an approval: answer kosong.Approve()"),
        ({"d1": Approve(), "p1": Approve()}, "not kosong.Approve()"),
        ({"d1": Approve(), "p1": "amber"}, 'the answer for "p1" (pick_color, external) is a str'),
    ]
    for answers, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            await agent_loop(model, "", tools, USER, resume=state, answers=answers)
    with pytest.raises(ValueError, match="the history the run started from: it had 1"):
        await agent_loop(
            model,
            "",
            tools,
            [*USER, *USER],
            resume=state,
            answers={"d1": Approve(), "p1": ToolOk()},
        )
    with pytest.raises(ValueError, match="pass resume=state"):
        await agent_loop(model, "", tools, USER, answers={"d1": Approve()})
    assert model.requests == [] and deleted == []
    with pytest.raises(ValueError, match="not an AgentState dump"):
        AgentState.load('{"version": 2}')


async def test_the_step_limits_and_counters_go_on_across_the_stop() -> None:
    tools = toolset()
    first = ScriptedChatProvider(
        [[call("list_files", {})], [call("delete_file", {"path": "a"}, id="d1")]]
    )
    stopped = await agent_loop(first, "", tools, USER, max_steps=3)
    assert stopped.state is not None and stopped.state.step == 2
    model = ScriptedChatProvider([[call("list_files", {})], [call("list_files", {})]])
    done = await agent_loop(
        model, "", tools, USER, max_steps=3, resume=stopped.state, answers={"d1": Deny("no")}
    )
    assert done.stop_reason == "max_steps" and model.turns_left == 1  # step 3 was the last


async def test_a_run_with_an_output_type_defers_then_answers_in_that_type() -> None:
    tools = toolset()
    first = ScriptedChatProvider(
        [
            [call("final_answer", {"color": 3})],  # fails validation: one retry spent
            [call("pick_color", {"hint": "warm"}, id="p1")],
        ]
    )
    stopped = await agent_loop(first, "", tools, USER, output_type=Choice, output_retries=1)
    assert stopped.stop_reason == "deferred" and stopped.state is not None
    assert stopped.output is None and stopped.state.output_failures == 1
    state = AgentState.load(stopped.state.dump())
    model = ScriptedChatProvider([[call("final_answer", {"color": "amber"})]])
    done = await agent_loop(
        model,
        "",
        tools,
        USER,
        output_type=Choice,
        output_retries=1,
        resume=state,
        answers={"p1": ToolOk(output="amber")},
    )
    assert done.stop_reason == "answered" and done.output == Choice(color="amber")
    assert "final_answer" in [t.name for t in model.requests[0].tools]
    # The retry spent before the stop still counts: one more bad answer is the last.
    again = ScriptedChatProvider([[call("final_answer", {"color": 4})]])
    with pytest.raises(OutputRetriesExhausted, match="after 2 attempt"):
        await agent_loop(
            again,
            "",
            tools,
            USER,
            output_type=Choice,
            output_retries=1,
            resume=state,
            answers={"p1": ToolOk(output="amber")},
        )


def test_a_deferred_error_is_a_denial_for_callers_that_cannot_answer() -> None:
    value = ToolDeferredError("delete_file", "approval", "Delete a?")
    assert isinstance(value, ToolPermissionDeniedError) and error_code(value) == "PERMISSION_DENIED"
    assert value.kind == "approval" and value.question == "Delete a?"
    assert "nobody can answer here" in value.message
    external = ToolDeferredError("pick_color", "external", "")
    assert external.kind == "external" and "its caller runs it" in external.message


@settings(max_examples=30, deadline=None)
@given(
    question=st.text(min_size=1).filter(str.strip),
    path=st.text(),
)
def test_a_state_reads_back_as_it_was_dumped(question: str, path: str) -> None:
    async def main() -> AgentState:
        tools = with_policies(
            SimpleToolset([delete_file]), ApprovalPolicy(lambda r: ApprovalDecision.defer(question))
        )
        model = ScriptedChatProvider([[call("delete_file", {"path": path}, id="d")]])
        stopped = await agent_loop(model, "", tools, USER)
        assert stopped.state is not None
        return stopped.state

    state = asyncio.run(main())
    again = AgentState.load(state.dump())
    assert again == state
    assert again.deferred == [
        DeferredCall("d", "delete_file", {"path": path}, question, "approval")
    ]


_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from kosong import AgentState, Approve, agent_loop
    from kosong.chat_provider.scripted import ScriptedChatProvider, call
    from kosong.message import Message
    from kosong.standard import with_policies
    from kosong.standard.policies import ApprovalDecision, ApprovalPolicy
    from kosong.tooling import tool
    from kosong.tooling.simple import SimpleToolset

    log = Path(sys.argv[2])

    @tool(destructive_hint=True)
    def delete_file(path: str) -> str:
        "Delete a file."
        with log.open("a") as f:
            f.write(f"{path}\\n")
        return f"deleted {path}"

    tools = with_policies(
        SimpleToolset([delete_file]),
        ApprovalPolicy(lambda r: ApprovalDecision.defer(f"Delete {r.arguments['path']}?")),
    )
    history = [Message(role="user", content="tidy up")]
    state_file = Path(sys.argv[3])

    async def main() -> None:
        if sys.argv[1] == "start":
            model = ScriptedChatProvider([[call("delete_file", {"path": "a.txt"}, id="d1")]])
            result = await agent_loop(model, "", tools, history)
            state_file.write_text(result.state.dump())
            print(result.stop_reason, [d.question for d in result.deferred])
        else:
            model = ScriptedChatProvider(
                [lambda h: [", ".join(m.extract_text() for m in h if m.role == "tool")]]
            )
            state = AgentState.load(state_file.read_text())
            result = await agent_loop(model, "", tools, history, resume=state,
                                      answers={"d1": Approve()})
            print(result.stop_reason, result.answer)

    asyncio.run(main())
    """
)


@pytest.mark.external  # two child processes
def test_a_run_deferred_in_one_process_is_resumed_in_another(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(_PROCESS)
    log, state = tmp_path / "deleted.log", tmp_path / "state.json"
    log.touch()

    def run(mode: str) -> str:
        done = subprocess.run(
            [sys.executable, str(script), mode, str(log), str(state)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("start") == "deferred ['Delete a.txt?']"
    assert log.read_text() == ""  # nothing ran; the first process is gone
    assert json.loads(state.read_text())["waiting"][0]["call"]["id"] == "d1"
    assert run("resume") == "answered deleted a.txt"
    assert log.read_text() == "a.txt\n"


async def test_a_state_resumed_twice_runs_its_approved_call_once_on_a_kosong_server() -> None:
    # The approved call carries the state's idempotency key to the server (RemoteToolset
    # sends it as Idempotency-Key), so resuming the same state again runs nothing again.
    from kosong.remote import RemoteToolset
    from kosong.server import create_app, serving
    from tests.server._tools import TOUCHED, touch

    tag = f"deferred-{id(object())}"
    async with serving(create_app([touch])) as url, RemoteToolset(url) as remote:
        tools = with_policies(
            remote,
            ApprovalPolicy(
                lambda r: ApprovalDecision.defer("touch?"), needs_approval=lambda t: True
            ),
        )
        model = ScriptedChatProvider([[call("touch", {"tag": tag}, id="t1")]])
        stopped = await agent_loop(model, "", tools, USER)
        assert stopped.state is not None and TOUCHED.count(tag) == 0
        text = stopped.state.dump()
        answers = []
        for _ in range(2):  # say the first resume's process died before it kept its result
            resumed = await agent_loop(
                ScriptedChatProvider([tool_texts]),
                "",
                tools,
                USER,
                resume=AgentState.load(text),
                answers={"t1": Approve()},
            )
            answers.append(resumed.answer)
    assert TOUCHED.count(tag) == 1
    assert answers == [f"t1=touched {tag}"] * 2
