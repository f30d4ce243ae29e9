"""The code examples of the user's documents (../shared/seeds/000 and 001) run as written.

000 is an API reference with fenced examples; 001 is a design document whose three examples
are plain text between known sentences. Examples of one document run in order in one
namespace, as a reader would paste them, and each one's printed output is compared with what
the document says it prints. Blocks that are API sketches ("类定义", signatures with `...`
bodies), and the one that talks to a chat model (`generate` with Kimi, a later issue), are
not run.

The examples use `typing.override`, new in Python 3.12, so this module needs 3.12 or newer;
`run.py` builds the test environment with the newest Python it finds for that reason.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import io
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests._local import missing

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"
DOC_000 = SEEDS / "000_a6f1716d30238e81.txt"
DOC_001 = SEEDS / "001_1775b7953387d815.txt"

pytestmark = [
    pytest.mark.skipif(
        sys.version_info < (3, 12),
        reason="the documents' examples import typing.override, which needs Python 3.12+; "
        "run `python3 run.py test`, which builds .venv with a 3.12+ interpreter when one exists",
    ),
]


@pytest.fixture(scope="module", autouse=True)
def _the_documents_are_here() -> None:
    """Without the documents, skip; in CI fail, as a test that never ran proves nothing."""
    absent = [str(path) for path in (DOC_000, DOC_001) if not path.is_file()]
    if absent:
        missing(
            f"the user's documents are not where this test reads them: {', '.join(absent)} "
            "(the checkout sits beside shared/seeds, as in /work/main and /work/shared)"
        )


# 000's fenced blocks, by position: None = not run (sketch or later issue), else the expected
# stdout. The schema print of block 21 is compared as a dict (see below).
_SKETCH = None
EXPECTED_000: dict[int, str | None] = {
    0: _SKETCH,  # class Tool(BaseModel): ... (definition)
    1: "get_weather\n{'type': 'string', 'description': '城市名称'}\n",
    2: "",
    3: "",
    4: "参数验证失败\n",
    5: _SKETCH,  # ToolOk dataclass definition
    6: "北京：晴天，温度 25°C\n成功获取天气信息\n天气查询成功\n",
    7: "",
    8: "\n\n",
    9: _SKETCH,  # ToolError dataclass definition
    10: "无法连接到天气服务 API\n天气查询失败\n\n",
    11: "",
    12: "",
    13: _SKETCH,  # CallableTool definition
    14: "30\n",
    15: "5.0\nTrue\n除数不能为零\n",
    16: "15\n",
    17: "",  # aiohttp example: defines FetchURLTool
    18: "",  # top-level await fragments
    19: "",
    20: _SKETCH,  # CallableTool2 definition (PEP 695 syntax)
    21: "SCHEMA",
    22: "找到 20 条关于 'Python' 的结果\n",
    23: "",
    24: "",  # comparison sketch; `Any` is not imported by the document, see _PRELUDE
    25: _SKETCH,  # Toolset protocol definition
    26: _SKETCH,  # ToolResult type sketch (uses an undefined `dataclass`)
    27: "",
    28: _SKETCH,  # SimpleToolset definition
    29: "['add', 'multiply']\n",
    30: "2\n",
    31: "1\n2\n",
    32: "call_123\n30\n",
    33: "call_1: 3\ncall_2: 12\ncall_3: 11\n",
    34: "Tool `unknown` not found\nInvalid arguments\nInvalid arguments\n",
    35: _SKETCH,  # `generate` with Kimi: run against a local server, see test_000_example_7
    # 000 prints `ToolReturnType`; 001 (newer) renamed it ToolReturnValue, and the message
    # names the current type. ToolReturnType is the same class under its old name. What
    # follows the document's text says what to write instead (issue 27).
    36: "Expected tool `invalid` to return `ToolReturnValue`, but got `<class 'str'>`; annotate "
    "`__call__` with `-> ToolReturnValue` and return ToolOk(output=...) or "
    "ToolError(message=...), or make the tool from a plain function with @tool\n",
}

# Block 24 uses `Any` without importing it; a reader's session would have it from earlier.
_PRELUDE = {24: "from typing import Any\n"}

SCHEMA_21 = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "城市名称"},
        "unit": {
            "type": "string",
            "description": "温度单位",
            "default": "celsius",
            "pattern": "^(celsius|fahrenheit)$",
        },
    },
    "required": ["city"],
}


def _fenced_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


def _new_namespace(name: str) -> dict[str, Any]:
    module = types.ModuleType(name)
    sys.modules[name] = module  # pydantic resolves annotations through the module
    return module.__dict__


def _run(source: str, namespace: dict[str, Any], label: str) -> str:
    code = compile(source, label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    return out.getvalue()


@pytest.fixture(scope="module")
def doc_000() -> tuple[list[str], dict[int, str], dict[str, Any]]:
    blocks = _fenced_blocks(DOC_000.read_text(encoding="utf-8"))
    namespace = _new_namespace("seed_000")
    outputs: dict[int, str] = {}
    for index, source in enumerate(blocks):
        if EXPECTED_000.get(index, "") is _SKETCH:
            continue
        outputs[index] = _run(_PRELUDE.get(index, "") + source, namespace, f"000[{index}]")
        if index == 19:  # later blocks reuse the name `result`
            namespace["_result_of_block_19"] = namespace["result"]
    return blocks, outputs, namespace


def test_the_api_reference_has_the_blocks_this_test_knows() -> None:
    blocks = _fenced_blocks(DOC_000.read_text(encoding="utf-8"))
    assert len(blocks) == len(EXPECTED_000) == 37
    assert "generate(" in blocks[35]
    assert "class Tool(BaseModel)" in blocks[0]


@pytest.mark.parametrize("index", [i for i, v in EXPECTED_000.items() if v not in (None, "SCHEMA")])
def test_each_api_reference_example_prints_what_the_document_says(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]], index: int
) -> None:
    _, outputs, _ = doc_000
    assert outputs[index] == EXPECTED_000[index]


def test_the_callable_tool2_example_exports_the_documented_schema(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]],
) -> None:
    _, outputs, _ = doc_000
    first, second = outputs[21].splitlines()
    assert first == "北京：晴天，25°C"
    assert ast.literal_eval(second) == SCHEMA_21
    # Same key order as the document shows, too.
    assert second == str(SCHEMA_21)


def test_the_api_reference_fragments_return_what_their_comments_say(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]],
) -> None:
    _, _, ns = doc_000
    from kosong.tooling import ToolOk
    from kosong.tooling.error import (
        ToolNotFoundError,
        ToolParseError,
        ToolRuntimeError,
        ToolValidateError,
    )

    assert isinstance(ns["error1"], ToolNotFoundError)
    assert ns["error1"].message == ns["error1"].brief == "Tool `get_weather` not found"
    assert isinstance(ns["error2"], ToolParseError)
    assert ns["error2"].message == "Error parsing JSON arguments: Invalid JSON syntax"
    assert ns["error2"].brief == "Invalid arguments"
    assert isinstance(ns["error3"], ToolValidateError)
    assert ns["error3"].message == ("Error validating JSON arguments: Missing required field: city")
    assert isinstance(ns["error4"], ToolRuntimeError)
    assert ns["error4"].message == "Error running tool: Connection timeout"
    assert ns["error4"].brief == "Tool runtime error"
    # Block 19's last call passes a string for a number.
    assert isinstance(ns["_result_of_block_19"], ToolValidateError)
    assert "a:" in ns["_result_of_block_19"].message
    assert not isinstance(ns["_result_of_block_19"], ToolOk)


def test_the_custom_toolset_example_builds_results_with_the_old_field_name(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]],
) -> None:
    _, _, ns = doc_000
    from kosong.message import ToolCall
    from kosong.tooling import Tool, ToolResult, Toolset
    from kosong.tooling.error import ToolNotFoundError

    toolset = ns["CustomToolset"]()
    assert isinstance(toolset, Toolset)  # the document's own toolset fits the protocol
    noop = Tool(name="noop", description="d", parameters={"type": "object"})
    toolset.add_tool(noop)  # pyright: ignore[reportAttributeAccessIssue]

    async def go() -> tuple[ToolResult, ToolResult]:
        missing = await toolset.handle(
            ToolCall(id="1", function=ToolCall.FunctionBody(name="nope", arguments="{}"))
        )
        found = await toolset.handle(
            ToolCall(id="2", function=ToolCall.FunctionBody(name="noop", arguments="{}"))
        )
        return missing, found

    missing, found = asyncio.run(go())
    assert isinstance(missing.result, ToolNotFoundError)
    assert missing.return_value is missing.result
    assert found.tool_call_id == "2"
    assert found.result.output == "执行成功"


def test_the_aiohttp_example_defines_its_tool(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]],
) -> None:
    if importlib.util.find_spec("aiohttp") is None:
        missing(
            "aiohttp is not installed (the dev extra has it: `python3 run.py lint` installs it)"
        )
    _, _, ns = doc_000
    tool = ns["FetchURLTool"]()
    assert tool.name == "fetch_url"
    assert tool.parameters["required"] == ["url"]


def test_the_generate_with_kimi_example_runs_as_written(
    doc_000: tuple[list[str], dict[int, str], dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Example 7 runs unchanged; only KIMI_BASE_URL points Kimi at a local server that streams
    the answer as Moonshot's API does (a call to `add` with 15 and 27)."""
    import threading

    sys.path.insert(0, str(Path(__file__).parents[1] / "chat_provider"))
    from _wire import DONE, Reply, WireServer, chat_chunk, tool_delta  # pyright: ignore[reportMissingImports]

    blocks, _, namespace = doc_000
    ready = threading.Event()
    stop: list[asyncio.Event] = []
    loop: list[asyncio.AbstractEventLoop] = []
    server: list[WireServer] = []

    async def serve() -> None:
        async with WireServer() as wire:
            arguments = ['{"a": 15', ', "b": 27}']
            wire.queue(
                Reply(
                    events=[
                        chat_chunk({"role": "assistant", "content": "我来计算。"}),
                        chat_chunk(tool_delta(0, id="call_1", name="add", arguments=arguments[0])),
                        chat_chunk(tool_delta(0, arguments=arguments[1])),
                        chat_chunk({}, finish_reason="tool_calls"),
                        DONE,
                    ],
                    # The example never closes its client: no connection may stay open.
                    headers={"Connection": "close"},
                )
            )
            server.append(wire)
            stop.append(asyncio.Event())
            loop.append(asyncio.get_running_loop())
            ready.set()
            await stop[0].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    try:
        assert ready.wait(timeout=10)
        monkeypatch.setenv("KIMI_BASE_URL", server[0].url + "/v1")
        out = _run(blocks[35], namespace, "000[35]")
    finally:
        if loop:
            loop[0].call_soon_threadsafe(stop[0].set)
        thread.join(timeout=10)
    assert out == "工具 add 返回: 42\n"
    body = server[0].requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "你是一个数学助手。"},
        {"role": "user", "content": "计算 15 + 27"},
    ]
    assert [t["function"]["name"] for t in body["tools"]] == ["add", "multiply"]
    assert server[0].requests[0].headers["Authorization"] == "Bearer your-api-key"


# ---- 001: three examples in running text -------------------------------------------------


def _between(text: str, start: str, end: str) -> str:
    body = text[text.index(start) + len(start) : text.index(end)]
    return body.strip("\n") + "\n"


@pytest.fixture(scope="module")
def doc_001() -> dict[str, Any]:
    text = DOC_001.read_text(encoding="utf-8")
    examples = [
        _between(text, "CallableTool2 定义强类型工具(推荐)\n", "该工具会自动导出"),
        _between(text, "CallableTool 定义动态参数工具\n", "这个方式灵活"),
        _between(
            text, "只要声明静态 type: str,就会被自动注册并参与反序列化。\n", "当 UI 端尚未支持"
        ),
    ]
    namespace = _new_namespace("seed_001")
    for index, source in enumerate(examples):
        assert _run(source, namespace, f"001[{index}]") == ""
    return namespace


def test_the_design_documents_callable_tool2_with_bare_class_attributes_works(
    doc_001: dict[str, Any],
) -> None:
    tool = doc_001["AddTool"]()
    assert tool.name == "add"
    assert tool.base.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "minimum": 0},
            "b": {"type": "integer", "minimum": 0},
        },
        "required": ["a", "b"],
    }
    result = asyncio.run(tool.call({"a": 2, "b": 3}))
    assert (result.output, result.message, result.brief) == ("5", "done", "结果: 5")
    invalid = asyncio.run(tool.call({"a": -1, "b": 3}))
    assert invalid.is_error and "a:" in invalid.message


def test_the_design_documents_echo_tool_rejects_unknown_properties(doc_001: dict[str, Any]) -> None:
    tool = doc_001["EchoTool"]()
    ok = asyncio.run(tool.call({"text": "hi"}))
    assert (ok.output, ok.brief) == ("hi", "hi")
    bad = asyncio.run(tool.call({"text": "hi", "extra": 1}))
    assert bad.is_error and "extra" in bad.message


def test_the_design_documents_table_block_round_trips_and_degrades_to_unknown(
    doc_001: dict[str, Any],
) -> None:
    from kosong.tooling import DisplayBlock, ToolOk, ToolReturnValue, UnknownDisplayBlock

    table_cls = doc_001["TableDisplayBlock"]
    block = table_cls(headers=["city"], rows=[["北京"]])
    value = ToolOk(output="ok", display=[block])
    dumped = value.model_dump(mode="json")
    again = ToolReturnValue.model_validate(dumped)
    assert isinstance(again.display[0], table_cls)
    assert again.model_dump(mode="json") == dumped
    # A client that never heard of "table" keeps every field.
    raw = {"type": "table2", "headers": ["x"], "rows": [["1"]]}
    unknown = ToolReturnValue.model_validate({**dumped, "display": [raw]}).display[0]
    assert isinstance(unknown, UnknownDisplayBlock)
    assert unknown.type == "table2"
    assert unknown.data == {"headers": ["x"], "rows": [["1"]]}
    assert DisplayBlock.registry["table"] is table_cls
