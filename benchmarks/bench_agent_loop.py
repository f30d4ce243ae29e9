"""What a model turn of an agent loop costs: kosong beside the published kosong 0.56 and the peers.

Every contender runs the same conversation against a fake model of its own library's kind (no
network, no LLM): for N turns the model asks for K calls of `add(a, b)`, then it answers
"done". So each runs the tool N*K times and makes N+1 model requests, the history growing by
K+1 messages a turn. What is measured is the library's own loop: merging the model's answer,
dispatching the calls (validation, the tool, its result), building the next request's history.

- kosong (this checkout): `agent_loop(model, "", SimpleToolset([Add()]), history)`, the model a
  minimal `ChatProvider`;
- kosong 0.56 (PyPI): `step`, then `tool_results()`, the history extended by hand; the same
  minimal provider;
- pydantic-ai: `Agent.run` / `Agent.run_stream`, the model a `FunctionModel` (with its
  `stream_function`);
- openai-agents: `Runner.run` / `Runner.run_streamed`, the model a `Model` (`get_response`,
  `stream_response`);
- LangChain: `create_agent(...).ainvoke` / `.astream(stream_mode="messages")`, the model a
  `BaseChatModel`.

Streamed, the model sends each call as its name then its arguments in two fragments (text in
two fragments), as a provider's stream does; not streamed, each answer comes whole. Per turn =
the CPU time of whole conversations / their turns (N+1 each): what the library spends, not
counting a wait on a timer nor the machine's other jobs. Each contender runs in a process of
its own, with its own venv's interpreter (one interpreter for all: the setup script makes them
on one Python); rounds alternate the order; medians over every repeat of every round.

Setup and run (the venvs are not part of the repository; see BENCHMARKS.md):

    benchmarks/setup_scale_bench.sh        # /tmp/kosong-bench/{peers,kosong056}
    python3 benchmarks/bench_agent_loop.py                 # N=10,160 x K=1,4 x streamed or not
    python3 benchmarks/bench_agent_loop.py --quick         # a smoke run
    python3 benchmarks/bench_agent_loop.py --worker kosong --n 10 --k 1 --streamed  # one case

The orchestrator needs only the standard library; `KOSONG_BENCH_ROOT` (default
/tmp/kosong-bench) is where the venvs are.
"""

# No `from __future__ import annotations`: the tools' classes are made inside functions, and
# kosong resolves a tool's annotations in its module (a local class would not be found).
import argparse
import asyncio
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("KOSONG_BENCH_ROOT", "/tmp/kosong-bench"))
VENVS = {
    "kosong": "peers",
    "kosong-0.56": "kosong056",
    "pydantic-ai": "peers",
    "openai-agents": "peers",
    "langchain": "peers",
}
CONTENDERS = list(VENVS)


# --- the contenders (run in a worker process) ---------------------------------------------------


class Turns:
    """The script every fake model plays: N turns of K calls, then "done"."""

    def __init__(self, n: int, k: int) -> None:
        self.n, self.k, self.turn, self.ran = n, k, 0, 0

    def reset(self) -> None:
        self.turn = self.ran = 0

    def next(self) -> list[tuple[str, int, int]] | None:
        """The calls of this turn as (id, a, b), or None for the final answer."""
        turn = self.turn
        self.turn += 1
        if turn >= self.n:
            return None
        return [(f"call_{turn}_{j}", turn, j) for j in range(self.k)]


def kosong_case(turns: Turns, streamed: bool, published: bool) -> Callable[[], Any]:
    from pydantic import BaseModel

    import kosong
    from kosong.message import Message, TextPart, ToolCall, ToolCallPart
    from kosong.tooling import CallableTool2, ToolOk, ToolReturnValue
    from kosong.tooling.simple import SimpleToolset

    class AddParams(BaseModel):
        a: int
        b: int

    class Add(CallableTool2[AddParams]):
        name: str = "add"
        description: str = "Add two integers."
        params: type[AddParams] = AddParams

        async def __call__(self, params: AddParams) -> ToolReturnValue:
            turns.ran += 1
            return ToolOk(output=str(params.a + params.b))

    class Stream:
        def __init__(self, parts: list[Any]) -> None:
            self._parts, self.id, self.usage = parts, None, None

        async def __aiter__(self) -> Any:
            for part in self._parts:
                yield part

    class Model:
        """The least a ChatProvider is: a name, a model, and an answer per request."""

        name = "fake"
        model_name = "fake"
        thinking_effort = None

        def with_thinking(self, effort: Any) -> "Model":
            return self

        async def generate(self, system_prompt: str, tools: Any, history: Any) -> "Stream":
            await asyncio.sleep(0)  # a request waits on the network: the loop runs meanwhile
            calls = turns.next()
            if calls is None:
                return Stream(
                    [TextPart(text="do"), TextPart(text="ne")]
                    if streamed
                    else [TextPart(text="done")]
                )
            parts: list[Any] = []
            for call_id, a, b in calls:
                if streamed:
                    parts.append(
                        ToolCall(
                            id=call_id, function=ToolCall.FunctionBody(name="add", arguments="")
                        )
                    )
                    parts.append(ToolCallPart(arguments_part=f'{{"a": {a}, '))
                    parts.append(ToolCallPart(arguments_part=f'"b": {b}}}'))
                else:
                    arguments = json.dumps({"a": a, "b": b})
                    parts.append(
                        ToolCall(
                            id=call_id,
                            function=ToolCall.FunctionBody(name="add", arguments=arguments),
                        )
                    )
            return Stream(parts)

    toolset = SimpleToolset([Add()])
    model = Model()

    async def ours() -> str:
        history = [Message(role="user", content="go")]
        result = await kosong.agent_loop(model, "", toolset, history, max_steps=turns.n + 1)  # type: ignore[attr-defined]
        return result.answer

    async def published_loop() -> str:
        history = [Message(role="user", content="go")]
        while True:
            result = await kosong.step(model, "", toolset, history)  # type: ignore[arg-type]
            results = await result.tool_results()
            history = [
                *history,
                result.message,
                *(
                    Message(role="tool", tool_call_id=r.tool_call_id, content=r.return_value.output)
                    for r in results
                ),
            ]
            if not result.tool_calls:
                return result.message.extract_text()

    return published_loop if published else ours


def pydantic_ai_case(turns: Turns, streamed: bool) -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def respond(messages: Any, info: AgentInfo) -> ModelResponse:
        calls = turns.next()
        if calls is None:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[ToolCallPart("add", {"a": a, "b": b}, tool_call_id=i) for i, a, b in calls]
        )

    async def stream(messages: Any, info: AgentInfo) -> AsyncIterator[Any]:
        calls = turns.next()
        if calls is None:
            yield "do"
            yield "ne"
            return
        for index, (call_id, a, b) in enumerate(calls):
            yield {
                index: DeltaToolCall(name="add", json_args=f'{{"a": {a}, ', tool_call_id=call_id)
            }
            yield {index: DeltaToolCall(json_args=f'"b": {b}}}')}

    agent = Agent(FunctionModel(respond, stream_function=stream))

    @agent.tool_plain
    async def add(a: int, b: int) -> str:
        """Add two integers."""
        turns.ran += 1
        return str(a + b)

    limits = UsageLimits(request_limit=None)

    async def run() -> str:
        if not streamed:
            return (await agent.run("go", usage_limits=limits)).output
        async with agent.run_stream("go", usage_limits=limits) as result:
            return await result.get_output()

    return run


def openai_agents_case(turns: Turns, streamed: bool) -> Callable[[], Any]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseTextDeltaEvent,
    )

    set_tracing_disabled(True)

    def output_of(calls: list[tuple[str, int, int]] | None) -> list[Any]:
        if calls is None:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            return [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        return [
            ResponseFunctionToolCall(
                type="function_call",
                id=i,
                call_id=i,
                name="add",
                arguments=json.dumps({"a": a, "b": b}),
            )
            for i, a, b in calls
        ]

    class FakeModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(output=output_of(turns.next()), usage=Usage(), response_id=None)

        async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            calls = turns.next()
            n = 0
            if calls is None:
                for piece in ("do", "ne"):
                    n += 1
                    yield ResponseTextDeltaEvent(
                        type="response.output_text.delta", item_id="m", output_index=0,
                        content_index=0, delta=piece, logprobs=[], sequence_number=n,
                    )  # fmt: skip
            else:
                for index, (call_id, a, b) in enumerate(calls):
                    for piece in (f'{{"a": {a}, ', f'"b": {b}}}'):
                        n += 1
                        yield ResponseFunctionCallArgumentsDeltaEvent(
                            type="response.function_call_arguments.delta", item_id=call_id,
                            output_index=index, delta=piece, sequence_number=n,
                        )  # fmt: skip
            response = Response(
                id="r", created_at=0, model="fake", object="response", output=output_of(calls),
                parallel_tool_calls=True, tool_choice="auto", tools=[],
            )  # fmt: skip
            yield ResponseCompletedEvent(
                type="response.completed", response=response, sequence_number=n + 1
            )

    @function_tool
    async def add(a: int, b: int) -> str:
        """Add two integers."""
        turns.ran += 1
        return str(a + b)

    agent = Agent(name="bench", model=FakeModel(), tools=[add])

    async def run() -> str:
        if not streamed:
            return (await Runner.run(agent, "go", max_turns=turns.n + 2)).final_output
        result = Runner.run_streamed(agent, "go", max_turns=turns.n + 2)
        async for _ in result.stream_events():
            pass
        return result.final_output

    return run


def langchain_case(turns: Turns, streamed: bool) -> Callable[[], Any]:
    create_agent: Any = importlib.import_module("langchain.agents").create_agent  # bench venv
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langchain_core.tools import tool

    class FakeModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            calls = turns.next()
            if calls is None:
                message = AIMessage(content="done")
            else:
                message = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "add", "args": {"a": a, "b": b}, "id": i} for i, a, b in calls
                    ],
                )
            return ChatResult(generations=[ChatGeneration(message=message)])

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> ChatResult:
            return self._generate(messages)

        async def _astream(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> AsyncIterator[ChatGenerationChunk]:
            calls = turns.next()
            if calls is None:
                for piece in ("do", "ne"):
                    yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
                return
            for index, (call_id, a, b) in enumerate(calls):
                first = tool_call_chunk(name="add", args=f'{{"a": {a}, ', id=call_id, index=index)
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[first])
                )
                rest = tool_call_chunk(name=None, args=f'"b": {b}}}', id=None, index=index)
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[rest])
                )

    @tool
    async def add(a: int, b: int) -> str:
        """Add two integers."""
        turns.ran += 1
        return str(a + b)

    agent = create_agent(FakeModel(), tools=[add])
    config = {"recursion_limit": 4 * turns.n + 10}

    async def run() -> str:
        state = {"messages": [("user", "go")]}
        if not streamed:
            result = await agent.ainvoke(state, config)
            return result["messages"][-1].content
        async for _ in agent.astream(state, config, stream_mode="messages"):
            pass
        return "done" if turns.turn == turns.n + 1 else "?"

    return run


def make_case(name: str, turns: Turns, streamed: bool) -> Callable[[], Any]:
    if name in ("kosong", "kosong-0.56"):
        return kosong_case(turns, streamed, published=name == "kosong-0.56")
    return {
        "pydantic-ai": pydantic_ai_case,
        "openai-agents": openai_agents_case,
        "langchain": langchain_case,
    }[name](turns, streamed)


SAMPLE_SECONDS = 0.2
"""A sample is as many whole conversations as fill this time (at least one)."""


def worker(name: str, n: int, k: int, streamed: bool, repeats: int) -> dict[str, Any]:
    samples: list[float] = []
    turns = Turns(n, k)
    run = make_case(name, turns, streamed)

    async def conversation() -> None:
        turns.reset()
        answer = await run()
        if answer != "done" or turns.ran != n * k:
            raise SystemExit(
                f"{name}: answered {answer!r} after {turns.ran} calls, not 'done' after {n * k}"
            )

    async def main() -> None:
        await conversation()  # warms up
        for _ in range(repeats):
            count, start, cpu = 0, time.perf_counter(), time.process_time()
            while True:
                await conversation()
                count += 1
                if time.perf_counter() - start >= SAMPLE_SECONDS:
                    break
            # CPU time: what the library spends (a loop that waits on a timer, as
            # pydantic-ai's streamed run does, is not charged for the wait; the machine's
            # other jobs are not charged either).
            samples.append((time.process_time() - cpu) / (count * (n + 1)) * 1e6)

    asyncio.run(main())
    return {"name": name, "n": n, "k": k, "streamed": streamed, "us_per_turn": samples}


# --- the orchestrator ----------------------------------------------------------------------------


def python_of(name: str) -> str:
    return str(ROOT / VENVS[name] / "bin" / "python")


def run_worker(name: str, n: int, k: int, streamed: bool, repeats: int) -> dict[str, Any]:
    argv = [
        python_of(name),
        __file__,
        "--worker",
        name,
        "--n",
        str(n),
        "--k",
        str(k),
        "--repeats",
        str(repeats),
    ]
    if streamed:
        argv.append("--streamed")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict[str, Any]], contenders: list[str]) -> str:
    cases = sorted({(r["streamed"], r["n"], r["k"]) for r in results})
    med: dict[tuple[str, bool, int, int], float] = {}
    for name in contenders:
        for case in cases:
            samples = [
                s
                for r in results
                if (r["name"], r["streamed"], r["n"], r["k"]) == (name, *case)
                for s in r["us_per_turn"]
            ]
            if samples:
                med[(name, *case)] = statistics.median(samples)
    head = "| streamed | N | K | " + " | ".join(f"{c} µs" for c in contenders)
    head += (
        " | kosong / 0.56 | "
        + " | ".join(f"{c} / kosong" for c in contenders if c not in ("kosong", "kosong-0.56"))
        + " |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for streamed, n, k in cases:
        ours = med.get(("kosong", streamed, n, k))
        row = [("yes" if streamed else "no"), str(n), str(k)]
        row += [
            f"{med[(c, streamed, n, k)]:,.1f}" if (c, streamed, n, k) in med else "-"
            for c in contenders
        ]
        published = med.get(("kosong-0.56", streamed, n, k))
        row.append(f"**{ours / published:.2f}x**" if ours and published else "-")
        for c in contenders:
            if c in ("kosong", "kosong-0.56"):
                continue
            peer = med.get((c, streamed, n, k))
            row.append(f"**{peer / ours:.1f}x**" if ours and peer else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker")
    parser.add_argument("--n", type=int, nargs="*", default=[10, 160])
    parser.add_argument("--k", type=int, nargs="*", default=[1, 4])
    parser.add_argument("--streamed", action="store_true", help="(worker) the streamed case")
    parser.add_argument("--repeats", type=int, default=5, help="runs of the conversation per round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds, each contender in a fresh process"
    )
    parser.add_argument("--only", help="comma-separated contenders")
    parser.add_argument("--quick", action="store_true", help="N=10, K=1, 1 round of 2 repeats")
    parser.add_argument("--out", help="write every sample as JSON here")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n[0], args.k[0], args.streamed, args.repeats)))
        return
    contenders = args.only.split(",") if args.only else CONTENDERS
    ns, ks, rounds, repeats = args.n, args.k, args.rounds, args.repeats
    if args.quick:
        ns, ks, rounds, repeats = [10], [1], 1, 2
    results: list[dict[str, Any]] = []
    started = time.strftime("%Y-%m-%d %H:%M")
    for round_ in range(rounds):
        order = contenders if round_ % 2 == 0 else contenders[::-1]
        for streamed in (False, True):
            for n in ns:
                for k in ks:
                    for name in order:
                        results.append(run_worker(name, n, k, streamed, repeats))
                        took = statistics.median(results[-1]["us_per_turn"])
                        print(f"round {round_ + 1}/{rounds} {name:14s} streamed={streamed!s:5s} "
                              f"N={n:<4d} K={k}: {took:,.1f} µs/turn", file=sys.stderr)  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"# agent loop, µs per model turn (medians; {rounds} rounds x {repeats} repeats; "
          f"{started}; load after: {os.getloadavg()[0]:.2f})\n")  # fmt: skip
    print(table(results, contenders))


if __name__ == "__main__":
    main()
