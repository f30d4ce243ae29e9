"""Servers that ask back, both ways and in both protocol eras.

- Our server: a tool asks with `current_call().elicit(...)`; the official SDK client (forced
  to the handshake era) and `MCPToolset` (which negotiates the 2026-07-28 era with our server)
  answer; `ask_user_to_approve` asks through it.
- Our client: `MCPToolset(elicitation=, sampling=, roots=)` against a server written on the
  MCP SDK's `MCPServer` with its `Resolve` markers (`Elicit`, `Sample`, `ListRoots`), which asks
  through `input_required` rounds in the 2026 era. The handshake era on the client side runs
  against the reference "everything" server, in test_mcp_everything.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import httpx
import mcp_types as mcp
import pytest
from mcp.server.mcpserver import Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel

from kosong.chat_provider.scripted import ScriptedChatProvider, ScriptedRequest
from kosong.mcp import (
    ElicitationRequest,
    MCPToolServer,
    MCPToolset,
    SamplingRequest,
    ask_user_to_approve,
)
from kosong.message import Message, TextPart, ToolCall
from kosong.server import ServerConfig, create_app
from kosong.standard import (
    ElicitAnswer,
    PolicyToolset,
    current_call,
    error_code,
    structured_data,
    with_policies,
)
from kosong.standard.policies import ApprovalPolicy
from kosong.testing import make_call
from kosong.tooling import tool
from kosong.tooling.simple import SimpleToolset
from mcp import Client
from tests.mcp._mcp_servers import Uvicorn

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
AGE = {"type": "object", "properties": {"age": {"type": "integer", "default": 7}}}


class Asked:
    """What the tools did: the calls that started (a side effect), and what they got."""

    def __init__(self) -> None:
        self.started: list[str] = []


def asking_tools(asked: Asked) -> SimpleToolset:
    @tool
    async def greet() -> str:
        """Ask the user's name, then their age; greet them."""
        asked.started.append("greet")
        call = current_call()
        assert call is not None
        name = await call.elicit("Your name?", NAME)
        if name.action != "accept" or name.content is None:
            return f"no name: {name.action}"
        age = await call.elicit("Your age?", AGE)
        return f"hello {name.content['name']} ({age.action}: {age.content})"

    @tool
    async def both() -> str:
        """Ask two questions at once."""
        call = current_call()
        assert call is not None
        first, second = await asyncio.gather(
            call.elicit("First?", NAME), call.elicit("Second?", NAME)
        )
        return f"{first.action} {second.action}"

    @tool(destructive_hint=True)
    def delete(path: str) -> str:
        """Delete a file."""
        asked.started.append(f"delete {path}")
        return f"deleted {path}"

    return SimpleToolset([greet, both, delete])


@pytest.fixture
def asked() -> Asked:
    return Asked()


@pytest.fixture
async def ours(asked: Asked) -> AsyncGenerator[Uvicorn]:
    toolset = with_policies(asking_tools(asked), ApprovalPolicy(hook=ask_user_to_approve))
    async with Uvicorn(MCPToolServer(toolset, input_timeout=2).app()) as running:
        yield running


def call(name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(
        id="c1", function=ToolCall.FunctionBody(name=name, arguments=json.dumps(arguments or {}))
    )


def answers(*given: ElicitAnswer) -> tuple[list[ElicitationRequest], Any]:
    seen: list[ElicitationRequest] = []
    queue = list(given)

    async def elicitation(request: ElicitationRequest) -> ElicitAnswer:
        seen.append(request)
        return queue.pop(0)

    return seen, elicitation


async def test_a_tool_asks_in_the_2026_era_and_resumes_where_it_stopped(
    ours: Uvicorn, asked: Asked
):
    seen, elicitation = answers(ElicitAnswer.accept({"name": "Ada"}), ElicitAnswer.accept({}))
    async with MCPToolset({"ours": ours.url}, elicitation=elicitation) as toolset:
        result = (await toolset.handle(call("greet"))).return_value
    assert result.output == "hello Ada (accept: {'age': 7})"  # the default filled in (SEP-1034)
    assert [(r.server, r.message, r.mode, r.schema) for r in seen] == [
        ("ours", "Your name?", "form", NAME),
        ("ours", "Your age?", "form", AGE),
    ]
    assert asked.started == ["greet"]  # three rounds, one call: nothing before it ran twice


async def test_a_tool_asks_over_the_handshake_back_channel(ours: Uvicorn, asked: Asked):
    questions: list[str] = []

    async def elicitation(context: Any, params: mcp.ElicitRequestParams) -> mcp.ElicitResult:
        questions.append(params.message)
        return mcp.ElicitResult(action="accept", content={"name": "Bob", "age": 3})

    async with Client(ours.url, mode="legacy", elicitation_callback=elicitation) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("greet", {})
    assert result.content == [mcp.TextContent(text="hello Bob (accept: {'name': 'Bob', 'age': 3})")]
    assert questions == ["Your name?", "Your age?"] and asked.started == ["greet"]


async def test_a_client_without_elicitation_is_not_asked_and_the_tool_gets_decline(
    ours: Uvicorn,
):
    async with MCPToolset({"ours": ours.url}) as toolset:
        modern = (await toolset.handle(call("greet"))).return_value
    async with Client(ours.url, mode="legacy") as client:
        legacy = await client.call_tool("greet", {})
    assert modern.output == "no name: decline"
    assert legacy.content == [mcp.TextContent(text="no name: decline")]


async def test_a_call_over_the_plain_http_routes_gets_decline(asked: Asked):
    app = create_app(asking_tools(asked), ServerConfig(rate_limit=None))
    async with Uvicorn(app) as running, httpx.AsyncClient(timeout=10) as http:
        response = await http.post(f"http://127.0.0.1:{running.port}/tools/greet", json={})
    assert response.json()["data"] == "no name: decline"


async def test_questions_asked_together_go_out_in_one_round(ours: Uvicorn):
    async def elicitation(context: Any, params: mcp.ElicitRequestParams) -> mcp.ElicitResult:
        return mcp.ElicitResult(action="accept", content={"name": params.message})

    async with Client(ours.url, elicitation_callback=elicitation) as client:
        first = await client.session.call_tool("both", {}, allow_input_required=True)
        assert isinstance(first, mcp.InputRequiredResult) and first.input_requests is not None
        messages = sorted(
            r.params.message  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
            for r in first.input_requests.values()
        )
        assert messages == ["First?", "Second?"]
        done = await client.call_tool("both", {})
    assert done.content == [mcp.TextContent(text="accept accept")]


async def test_an_answer_resumes_only_its_own_call(ours: Uvicorn, asked: Asked):
    async with Client(ours.url, elicitation_callback=_accept_name) as client:
        session = client.session
        first = await session.call_tool("greet", {}, allow_input_required=True)
        assert isinstance(first, mcp.InputRequiredResult) and first.request_state is not None
        state = first.request_state
        responses: dict[str, mcp.InputResponse] = {"elicitation-0": _name("Eve")}
        # Another tool, other arguments, or a state nobody issued: told to call again.
        for name, arguments, given in [
            ("both", {}, state),
            ("greet", {"x": 1}, state),
            ("greet", {}, "made-up"),
        ]:
            refused = await session.call_tool(
                name, arguments, input_responses=responses, request_state=given,
                allow_input_required=True,
            )  # fmt: skip
            assert isinstance(refused, mcp.CallToolResult) and refused.is_error
            assert "call the tool again" in refused.content[0].text  # pyright: ignore[reportAttributeAccessIssue]
        # The call itself still waits, and its own retry resumes it.
        second = await session.call_tool(
            "greet", {}, input_responses=responses, request_state=state, allow_input_required=True
        )
        assert isinstance(second, mcp.InputRequiredResult)  # now it asks the age
        assert second.request_state != state  # a state is good for one retry only
        replayed = await session.call_tool(
            "greet", {}, input_responses=responses, request_state=state, allow_input_required=True
        )
        assert isinstance(replayed, mcp.CallToolResult) and replayed.is_error
    assert asked.started == ["greet"]


async def test_progress_goes_to_the_round_in_progress(asked: Asked):
    @tool
    async def survey() -> str:
        """Report progress, ask, report again."""
        call = current_call()
        assert call is not None
        call.report_progress(25, "before asking")
        answer = await call.elicit("Name?", NAME)
        call.report_progress(75, "after the answer")
        return str(answer.action)

    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with (
        Uvicorn(MCPToolServer(SimpleToolset([survey])).app()) as running,
        Client(running.url, elicitation_callback=_accept_name) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        done = await client.call_tool("survey", {}, progress_callback=on_progress)
    assert done.content == [mcp.TextContent(text="accept")]
    assert seen == [(25.0, "before asking"), (75.0, "after the answer")]


async def test_a_call_left_waiting_gets_cancel_and_its_late_answer_is_refused(asked: Asked):
    finished: list[str] = []
    ended = asyncio.Event()

    @tool
    async def wait() -> str:
        """Ask, and note what came back."""
        call = current_call()
        assert call is not None
        answer = await call.elicit("Still there?", NAME)
        finished.append(answer.action)
        ended.set()
        return answer.action

    server = MCPToolServer(SimpleToolset([wait]), input_timeout=0.3)
    async with (
        Uvicorn(server.app()) as running,
        Client(running.url, elicitation_callback=_accept_name) as client,
    ):
        first = await client.session.call_tool("wait", {}, allow_input_required=True)
        assert isinstance(first, mcp.InputRequiredResult)
        async with asyncio.timeout(10):
            await ended.wait()
        late = await client.session.call_tool(
            "wait", {}, input_responses={"elicitation-0": _name("x")},
            request_state=first.request_state, allow_input_required=True,
        )  # fmt: skip
    assert finished == ["cancel"]  # the user never answered: the tool heard so, and ended
    assert isinstance(late, mcp.CallToolResult) and late.is_error


@pytest.mark.parametrize(
    ("answer", "runs"),
    [
        (ElicitAnswer.accept({"approve": True}), True),
        (ElicitAnswer.accept({"approve": False}), False),
        (ElicitAnswer.accept({}), False),
        (ElicitAnswer.decline(), False),
        (ElicitAnswer.cancel(), False),
    ],
    ids=["yes", "unticked", "empty", "declined", "cancelled"],
)
async def test_approval_asks_the_user_and_only_an_explicit_yes_runs_the_tool(
    ours: Uvicorn, asked: Asked, answer: ElicitAnswer, runs: bool
):
    seen, elicitation = answers(answer, answer)
    async with MCPToolset({"ours": ours.url}, elicitation=elicitation) as toolset:
        modern = (await toolset.handle(call("delete", {"path": "/a"}))).return_value

    async def legacy_answer(context: Any, params: mcp.ElicitRequestParams) -> mcp.ElicitResult:
        return mcp.ElicitResult(action=answer.action, content=answer.content)

    async with Client(ours.url, mode="legacy", elicitation_callback=legacy_answer) as client:
        legacy = await client.call_tool("delete", {"path": "/b"})
    assert seen[0].message == 'Allow `delete` to run with {"path": "/a"}?'
    assert seen[0].schema is not None and seen[0].schema["required"] == ["approve"]
    if runs:
        assert modern.output == "deleted /a" and not legacy.is_error
        assert asked.started == ["delete /a", "delete /b"]
    else:
        assert modern.is_error and error_code(modern) == "PERMISSION_DENIED"
        assert legacy.is_error and legacy.meta == {"kosong/error": {"code": "PERMISSION_DENIED"}}
        assert asked.started == []  # fail closed: the tool never ran


async def test_approval_is_denied_when_no_user_can_be_asked(ours: Uvicorn, asked: Asked):
    async with MCPToolset({"ours": ours.url}) as toolset:  # a client without elicitation
        over_mcp = (await toolset.handle(call("delete", {"path": "/a"}))).return_value
    direct = PolicyToolset(asking_tools(asked), ApprovalPolicy(hook=ask_user_to_approve))
    in_process = (await direct.handle(make_call("delete", {"path": "/b"}))).return_value
    for denied in (over_mcp, in_process):
        assert denied.is_error and error_code(denied) == "PERMISSION_DENIED"
        assert "declined (or could not be asked)" in denied.message
    assert asked.started == []


# --- our client, against the MCP SDK's own server (2026 era: input_required rounds) -------------


class Name(BaseModel):
    name: str


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def _ask_model() -> Sample:
    return Sample(
        [mcp.SamplingMessage(role="user", content=mcp.TextContent(text="Say hi to Ada"))],
        max_tokens=64,
        system_prompt="Be brief.",
        temperature=0.2,
    )


def _ask_roots() -> ListRoots:
    return ListRoots()


@pytest.fixture
async def sdk_asker() -> AsyncGenerator[Uvicorn]:
    server = MCPServer("asker")

    @server.tool()
    def greet(name: Annotated[Name, Resolve(_ask_name)]) -> str:
        """Greet the user, asking their name."""
        return f"hello {name.name}"

    @server.tool()
    def complete(answer: Annotated[mcp.CreateMessageResult, Resolve(_ask_model)]) -> str:
        """Ask the client's model."""
        content = answer.content
        text = content.text if isinstance(content, mcp.TextContent) else "?"
        return f"{answer.model} said {text!r} ({answer.stop_reason})"

    @server.tool()
    def where(listed: Annotated[mcp.ListRootsResult, Resolve(_ask_roots)]) -> list[str]:
        """The client's roots."""
        return [str(root.uri) for root in listed.roots]

    async with Uvicorn(server.streamable_http_app()) as running:
        yield running


async def test_our_elicitation_answers_an_sdk_servers_input_required_round(sdk_asker: Uvicorn):
    seen, elicitation = answers(ElicitAnswer.accept({"name": "Ada"}))
    async with MCPToolset({"sdk": sdk_asker.url}, elicitation=elicitation) as toolset:
        result = (await toolset.handle(call("greet"))).return_value
    # The SDK's `-> str` tool: the text is what the model reads, its `{"result": ...}` unwrapped.
    assert result.output == "hello Ada" and structured_data(result) == "hello Ada"
    assert seen[0].message == "What is your name?" and seen[0].schema is not None
    assert seen[0].schema["required"] == ["name"]


async def test_sampling_runs_on_the_users_chat_provider(sdk_asker: Uvicorn):
    provider = ScriptedChatProvider([["Hi, Ada!"]], model="scripted-small")
    async with MCPToolset({"sdk": sdk_asker.url}, sampling=provider) as toolset:
        result = (await toolset.handle(call("complete"))).return_value
    assert result.output == "scripted-small said 'Hi, Ada!' (endTurn)"
    request: ScriptedRequest = provider.requests[0]
    assert request.system_prompt == "Be brief."
    assert [(m.role, m.extract_text()) for m in request.history] == [("user", "Say hi to Ada")]
    # The server's limits, sent as the provider's generation settings.
    assert request.generation_kwargs == {"max_tokens": 64, "temperature": 0.2}


async def test_sampling_by_a_callback_gets_the_request_as_kosong_messages(sdk_asker: Uvicorn):
    seen: list[SamplingRequest] = []

    async def sampling(request: SamplingRequest) -> str:
        seen.append(request)
        return "hello from the callback"

    async with MCPToolset({"sdk": sdk_asker.url}, sampling=sampling) as toolset:
        result = (await toolset.handle(call("complete"))).return_value
    assert result.output == "client said 'hello from the callback' (endTurn)"
    assert (seen[0].server, seen[0].system_prompt, seen[0].max_tokens, seen[0].temperature) == (
        "sdk", "Be brief.", 64, 0.2
    )  # fmt: skip
    assert seen[0].messages == [Message(role="user", content="Say hi to Ada")]


async def test_roots_are_listed_to_servers_that_ask(sdk_asker: Uvicorn, tmp_path: Any):
    roots = ["file:///srv/data", tmp_path]
    async with MCPToolset({"sdk": sdk_asker.url}, roots=roots) as toolset:
        result = (await toolset.handle(call("where"))).return_value
    assert structured_data(result) == ["file:///srv/data", tmp_path.as_uri()]
    assert result.output == [TextPart(text="file:///srv/data"), TextPart(text=tmp_path.as_uri())]


async def test_a_failing_callback_gives_the_server_an_error_never_an_answer(sdk_asker: Uvicorn):
    async def broken(request: ElicitationRequest) -> ElicitAnswer:
        raise RuntimeError("the dialog crashed")

    async def wrong(request: ElicitationRequest) -> ElicitAnswer:
        return "yes"  # type: ignore[return-value]  # a callback that answers the wrong thing

    for elicitation, said in [(broken, "RuntimeError: the dialog crashed"), (wrong, "'yes'")]:
        async with MCPToolset({"sdk": sdk_asker.url}, elicitation=elicitation) as toolset:
            result = (await toolset.handle(call("greet"))).return_value
        assert result.is_error and said in result.message


async def test_an_elicitation_callback_may_answer_with_the_sdks_elicit_result(
    sdk_asker: Uvicorn, ours: Uvicorn
):
    # As `sampling=` takes the SDK's CreateMessageResult, `elicitation=` takes its ElicitResult.
    async def sdk_answer(request: ElicitationRequest) -> mcp.ElicitResult:
        if request.message == "Your age?":
            return mcp.ElicitResult(action="decline")
        return mcp.ElicitResult(action="accept", content={"name": "Ada"})

    async with MCPToolset({"sdk": sdk_asker.url}, elicitation=sdk_answer) as toolset:
        result = (await toolset.handle(call("greet"))).return_value
    assert result.output == "hello Ada"
    async with MCPToolset({"ours": ours.url}, elicitation=sdk_answer) as toolset:
        ours_result = (await toolset.handle(call("greet"))).return_value
    assert ours_result.output == "hello Ada (decline: None)"


def test_roots_must_be_uris_or_absolute_paths():
    with pytest.raises(ValueError, match="neither a URI nor an absolute path"):
        MCPToolset({"x": "http://127.0.0.1:1/mcp"}, roots=["relative/dir"])


async def _accept_name(context: Any, params: mcp.ElicitRequestParams) -> mcp.ElicitResult:
    return _name("Ada")


def _name(name: str) -> mcp.ElicitResult:
    return mcp.ElicitResult(action="accept", content={"name": name})
