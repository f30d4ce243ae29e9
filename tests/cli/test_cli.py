"""The `kosong` command, run as users run it: a subprocess, its output and exit code."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from kosong import __version__
from mcp import Client
from tests._local import free_port
from tests.mcp._mcp_servers import wait_for_port
from tests.server._procs import ServerProcess
from tests.server._tools import tools

pytestmark = pytest.mark.external  # `kosong` command lines and the servers they start

TOOLS = str(Path(__file__).parents[1] / "server" / "_tools.py")


def kosong(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kosong", *args],
        capture_output=True, text=True, timeout=60, cwd=cwd, check=False,
    )  # fmt: skip


def _one_clear_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kosong: error: "), done.stderr
    return lines[0]


def test_a_missing_module_is_one_clear_line() -> None:
    line = _one_clear_line(kosong("serve", "no_such_module:tools"))
    assert "no module named 'no_such_module'" in line


def test_a_wrong_attribute_is_one_clear_line_naming_what_there_is() -> None:
    line = _one_clear_line(kosong("tools", "list", f"{TOOLS}:nope"))
    assert "has no attribute 'nope'" in line and "tools" in line


def test_a_module_that_fails_to_import_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    line = _one_clear_line(kosong("tools", "list", "broken:tools", cwd=tmp_path))
    assert "RuntimeError: boom" in line


def test_a_port_in_use_is_one_clear_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_clear_line(kosong("serve", f"{TOOLS}:tools", "--port", str(port)))
    assert f"cannot listen on 127.0.0.1:{port}" in line and "in use" in line


def test_an_unreachable_redis_is_one_clear_line() -> None:
    port = free_port()  # nothing listens there
    line = _one_clear_line(
        kosong("serve", f"{TOOLS}:tools", "--redis", f"redis://127.0.0.1:{port}")
    )
    assert f"cannot reach Redis at redis://127.0.0.1:{port}" in line


def test_tools_list_schema_and_call_on_a_module() -> None:
    listed = kosong("tools", "list", f"{TOOLS}:tools")
    schema = kosong("tools", "schema", f"{TOOLS}:tools", "add")
    called = kosong("tools", "call", f"{TOOLS}:tools", "add", "-a", "a=1", "-a", "b=2", "--json")
    failed = kosong("tools", "call", f"{TOOLS}:tools", "add", '{"a": "x"}', "--json")
    assert listed.returncode == 0 and listed.stdout.splitlines()[0].split() == [
        "add",
        "Add",
        "two",
        "integers.",
    ]
    assert json.loads(schema.stdout)["parameters"]["required"] == ["a", "b"]
    assert called.returncode == 0 and json.loads(called.stdout)["data"] == 3
    assert failed.returncode == 1 and json.loads(failed.stdout)["error"]["code"] == "INVALID_PARAMS"


def test_tools_call_on_a_server_shows_progress_and_prints_the_envelope() -> None:
    server = ServerProcess("--token", "t0k")
    try:
        listed = kosong("tools", "list", server.url, "--token", "t0k")
        denied = kosong("tools", "list", server.url)
        called = kosong("tools", "call", server.url, "count", '{"n": 3, "delay": 0}',
                        "--token", "t0k", "--progress", "--json")  # fmt: skip
    finally:
        server.kill()
    assert [line.split()[0] for line in listed.stdout.splitlines()][:2] == ["add", "count"]
    assert _one_clear_line(denied).endswith(
        "answered 401: a valid bearer token is needed (Authorization: Bearer <token>); give the "
        "token with --token TOKEN or the KOSONG_TOKEN environment variable"
    )
    assert called.returncode == 0 and json.loads(called.stdout)["data"] == "counted"
    assert "count: step 3" in called.stderr  # the progress bar's label, from the events


@pytest.mark.parametrize(("new_schema", "code"), [
    ({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}, 0),
    ({"type": "object", "properties": {"town": {"type": "string"}}, "required": ["town"]}, 1),
])  # fmt: skip
def test_compat_reports_and_exits_1_on_a_breaking_change(
    tmp_path: Path, new_schema: dict[str, object], code: int
) -> None:
    old = {"name": "weather", "version": "1.0.0", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}  # fmt: skip
    new = {"name": "weather", "version": "2.0.0", "parameters": new_schema}
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    done = kosong("compat", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert done.returncode == code
    assert done.stdout.startswith("weather 1.0.0 -> 2.0.0: ")
    assert ("INCOMPATIBLE" in done.stdout) == bool(code)


def test_compat_takes_module_attributes_too() -> None:
    done = kosong("compat", f"{TOOLS}:add", f"{TOOLS}:add")
    assert done.returncode == 0 and "add ? -> ?: compatible" in done.stdout
    bad = kosong("compat", f"{TOOLS}:tools", f"{TOOLS}:add")
    assert f"holds {len(tools)} tools" in _one_clear_line(bad)


def test_check_prints_the_dialect_report_and_fails_when_a_provider_would_reject(
    tmp_path: Path,
) -> None:
    (tmp_path / "schema_tools.py").write_text(
        "from kosong.tooling import CallableTool, ToolOk\n"
        "class Loose(CallableTool):\n"
        "    name: str = 'loose'\n"
        "    description: str = 'Takes an untyped property.'\n"
        "    parameters: dict = {'type': 'object', 'properties': {'x': {'description': 'any'}}}\n"
        "    async def __call__(self, x=None) -> ToolOk:\n"
        "        return ToolOk(output='ok')\n"
        "tools = [Loose()]\n"
    )
    done = kosong("check", "schema_tools:tools", "--dialect", "moonshot", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "loose" in done.stdout and "properties.x" in done.stdout and "moonshot" in done.stdout
    fine = kosong("check", f"{TOOLS}:tools", "--dialect", "openai")
    assert fine.returncode == 0, fine.stdout + fine.stderr


def test_check_prints_only_findings_unless_verbose(tmp_path: Path) -> None:
    (tmp_path / "bounded.py").write_text(
        "from typing import Annotated\n"
        "from pydantic import Field\n"
        "from kosong.tooling import tool\n"
        "@tool\n"
        "def pick(n: Annotated[int, Field(ge=1)]) -> int:\n"
        '    """Pick a number."""\n'
        "    return n\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        '    """Add two integers."""\n'
        "    return a + b\n"
        "toolset = [pick, add]\n"
    )
    short = kosong("check", "bounded.py", "--dialect", "openai", cwd=tmp_path)
    rejected_only = kosong(
        "check", "bounded.py", "--dialect", "openai", "--rejected-only", cwd=tmp_path
    )
    verbose = kosong("check", "bounded.py", "--dialect", "openai", "--verbose", cwd=tmp_path)
    assert short.returncode == 0, short.stderr
    assert short.stdout.splitlines() == [
        "pick [openai] ignored: parameters.properties.n.minimum: `minimum` guides the model but is "
        "not enforced on what it writes (no strict mode); the toolset still validates it "
        "[openai.not-enforced]",
        "2 tool(s), 1 dialect(s): no provider rejects them, 1 ignored",
    ]
    assert rejected_only.stdout.splitlines() == [
        "2 tool(s), 1 dialect(s): no provider rejects them"
    ]
    assert "add [openai]: ok" in verbose.stdout.splitlines()


def test_check_exits_0_for_ordinary_tools_and_applies_strict_rules_only_when_asked(
    tmp_path: Path,
) -> None:
    (tmp_path / "plain_tools.py").write_text(
        "from kosong.tooling import tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        '    """Add two integers."""\n'
        "    return a + b\n"
        "tools = [add]\n"
    )
    done = kosong("check", "plain_tools:tools", "--verbose", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "add [openai-strict]: not checked (the tool is not strict)" in done.stdout
    asked = kosong("check", "plain_tools:tools", "--dialect", "openai-strict", cwd=tmp_path)
    assert asked.returncode == 1 and "add [openai-strict] rejected: " in asked.stdout


def test_check_refuses_an_unknown_dialect_with_the_choices() -> None:
    done = kosong("check", f"{TOOLS}:tools", "--dialect", "palm")
    assert done.returncode == 2 and "'palm' is not one of" in done.stderr


ROOT = Path(__file__).resolve().parents[2]
STRUCTURED = ROOT / "tests" / "mcp" / "_structured_tools.py"


@pytest.mark.parametrize(
    "target",
    [
        f"{STRUCTURED}:tools",  # a file path, a list of tools
        f"{STRUCTURED}:make_toolset",  # a sync factory of a toolset
        f"{STRUCTURED}:make_tools",  # an async factory of a list
        "tests.mcp._structured_tools:make_tools",  # a module, from the working directory
    ],
)
def test_every_command_takes_files_modules_and_factories_sync_or_async(target: str) -> None:
    listed = kosong("tools", "list", target, cwd=ROOT)
    checked = kosong("check", target, "--dialect", "openai", cwd=ROOT)
    served = ServerProcess(target=target, cwd=ROOT)
    try:
        over_http = httpx.get(f"{served.url}/tools", timeout=10).json()
    finally:
        served.kill()
    over_stdio = kosong(
        "tools", "list", f"{sys.executable} -m kosong mcp {target}", cwd=ROOT
    )  # `kosong mcp`, run by `kosong tools` as an MCP command
    for done in (listed, checked, over_stdio):
        assert done.returncode == 0, done.stdout + done.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["weather", "count"]
    assert [line.split()[0] for line in over_stdio.stdout.splitlines()] == ["weather", "count"]
    assert [tool["name"] for tool in over_http["tools"]] == ["weather", "count"]


def test_a_factory_that_fails_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "broken_factory.py").write_text(
        "async def make():\n    raise RuntimeError('no database')\n"
    )
    line = _one_clear_line(kosong("mcp", "broken_factory:make", cwd=tmp_path))
    assert line == "kosong: error: calling broken_factory:make failed: RuntimeError: no database"


def _mcp_over_http(port: int, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kosong", "mcp", f"{STRUCTURED}:tools", "--http",
         "--host", "127.0.0.1", "--port", str(port), *args],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def test_kosong_mcp_and_kosong_serve_name_their_server_with_kosongs_version() -> None:
    port = free_port()
    mcp_http = _mcp_over_http(port, "--name", "weather-mcp")
    served = ServerProcess("--name", "weather-http", target=f"{STRUCTURED}:tools")
    try:
        await asyncio.to_thread(wait_for_port, port)
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
            alone = client.server_info
            count = await client.call_tool("count", {"words": ["a", "b", "c"]})
        async with Client(f"{served.url}/mcp", mode="legacy") as client:
            beside = client.server_info
    finally:
        mcp_http.kill()
        mcp_http.wait(10)
        served.kill()
    assert alone is not None and (alone.name, alone.version) == ("weather-mcp", __version__)
    assert beside is not None and (beside.name, beside.version) == ("weather-http", __version__)
    assert count.structured_content == {"result": 3}


def test_token_and_header_go_with_a_url_and_a_bad_header_is_one_clear_line() -> None:
    line = _one_clear_line(kosong("tools", "list", f"{TOOLS}:tools", "--token", "x"))
    assert "--token and --header go with a server URL" in line
    bad = _one_clear_line(kosong("tools", "list", "http://127.0.0.1:9/mcp", "--header", "oops"))
    assert "--header 'oops' is not 'Name: value'" in bad


# --- one grammar of targets ---------------------------------------------------------------------


def test_tools_call_prints_the_results_text_and_a_failure_on_stderr() -> None:
    called = kosong("tools", "call", f"{TOOLS}:tools", "add", "-a", "a=1", "-a", "b=2")
    assert (called.returncode, called.stdout, called.stderr) == (0, "3\n", "")
    failed = kosong("tools", "call", f"{TOOLS}:tools", "add", '{"a": "x", "b": 1, "c": 2}')
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        "kosong: INVALID_PARAMS: Error validating JSON arguments: c: not a parameter of this tool "
        "(got 2); its parameters: a, b; a: Input should be a valid integer, unable to parse string "
        'as an integer (got "x")'
    ]


def test_a_module_or_a_file_alone_means_its_toolset(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(
        "from kosong.tooling import tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        '    """Add two integers."""\n'
        "    return a + b\n"
        "toolset = [add]\n"
    )
    (tmp_path / "other.py").write_text("from mytools import add\nmine = [add]\n")
    for target in ("mytools", "mytools.py", str(tmp_path / "mytools.py")):
        done = kosong("tools", "list", target, cwd=tmp_path)
        assert done.stdout.split() == ["add", "Add", "two", "integers."], done.stderr
        assert kosong("check", target, cwd=tmp_path).returncode == 0
    line = _one_clear_line(kosong("tools", "list", "other", cwd=tmp_path))
    assert line == (
        "kosong: error: module 'other' has no attribute 'toolset'; it has mine, add "
        "(write other:mine)"
    )
    nothing = _one_clear_line(kosong("tools", "list", "no_such_thing_here", cwd=tmp_path))
    assert nothing == (
        "kosong: error: no module, file or command named 'no_such_thing_here'; a TARGET is "
        "MODULE:ATTR, path/to/file.py[:ATTR], MODULE alone (its `toolset`), a server URL, or "
        "the command of an MCP server"
    )


def test_a_stdio_command_without_arguments_is_an_mcp_server(tmp_path: Path) -> None:
    server = tmp_path / "bin" / "my-mcp-server"
    server.parent.mkdir()
    server.write_text(f"#!{sys.executable}\nimport runpy, sys\n"
                      f"sys.argv = ['kosong', 'mcp', {str(STRUCTURED) + ':tools'!r}]\n"
                      "runpy.run_module('kosong', run_name='__main__')\n")  # fmt: skip
    server.chmod(0o755)
    by_path = kosong("tools", "list", str(server))
    assert by_path.returncode == 0, by_path.stderr
    assert [line.split()[0] for line in by_path.stdout.splitlines()] == ["weather", "count"]
    on_path = subprocess.run(
        [sys.executable, "-m", "kosong", "tools", "list", "my-mcp-server"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PATH": f"{server.parent}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert on_path.returncode == 0, on_path.stderr
    assert on_path.stdout == by_path.stdout


def test_a_url_of_an_mcp_server_is_found_without_mcp_and_forced_with_it() -> None:
    port = free_port()
    mcp_http = _mcp_over_http(port)
    try:
        wait_for_port(port)
        base = f"http://127.0.0.1:{port}"
        guessed = kosong("tools", "list", base)  # kosong's routes are not there: MCP, at /mcp
        checked = kosong("check", base, "--dialect", "openai")
        forced = kosong("tools", "call", f"{base}/mcp", "count", '{"words": ["a"]}', "--mcp")
        nothing = kosong("tools", "list", base, "--mcp")  # forced: no guessing of /mcp
    finally:
        mcp_http.kill()
        mcp_http.wait(10)
    assert [line.split()[0] for line in guessed.stdout.splitlines()] == ["weather", "count"]
    assert checked.returncode == 0, checked.stderr
    # The model reads the content's text; `{"result": 1}` is the data beside it (--json).
    assert (forced.returncode, forced.stdout) == (0, "1\n"), forced.stderr
    assert _one_clear_line(nothing).startswith(f"kosong: error: cannot use the MCP server {base}")


def test_a_url_that_is_neither_kind_says_where_an_mcp_endpoint_usually_is() -> None:
    port = free_port()  # for a server that answers 404 to everything
    served = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=Path(__file__).parent,
    )  # fmt: skip
    try:
        wait_for_port(port)
        line = _one_clear_line(kosong("tools", "list", f"http://127.0.0.1:{port}"))
    finally:
        served.kill()
        served.wait(10)
    assert line.startswith(f"kosong: error: http://127.0.0.1:{port} is neither a kosong server")
    assert line.endswith(
        f"give the URL of an MCP server's endpoint, often http://127.0.0.1:{port}/mcp"
    )


def test_serve_and_worker_take_every_kind_of_target_and_help_is_whole_sentences() -> None:
    top = kosong("--help").stdout
    commands = top.split("Commands:", 1)[1].strip().splitlines()
    assert len(commands) == 6
    for line in commands:
        assert line.rstrip().endswith(".") and "..." not in line, line
    for command in ("serve", "worker", "mcp", "check"):
        text = kosong(command, "--help").stdout
        assert "MODULE:ATTR" not in text.split("Options:")[0].split("\n", 1)[0]
        assert "TARGET is MODULE:ATTR or path/to/file.py:ATTR" in " ".join(text.split())


def test_kosong_serve_serves_the_tools_of_an_mcp_command() -> None:
    served = ServerProcess(target=f"{sys.executable} -m kosong mcp {STRUCTURED}:tools", cwd=ROOT)
    try:
        listed = httpx.get(f"{served.url}/tools", timeout=10).json()
        called = httpx.post(
            f"{served.url}/tools/count", json={"words": ["a", "b"]}, timeout=30
        ).json()
    finally:
        served.kill()
    assert [tool["name"] for tool in listed["tools"]] == ["weather", "count"]
    assert called["data"] == 2  # a `-> int` tool's value, its MCP `{"result": 2}` taken off


def test_tools_take_an_mcp_servers_file_with_config(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "mcp_stdio_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {"command": sys.executable, "args": [str(example)]},
                    "broken": {"command": "x", "headers": {}, "disabled": True},
                }
            }
        )
    )
    listed = kosong("tools", "list", "--config", str(config))
    one = kosong("tools", "list", "--config", str(config), "notes")
    called = kosong(
        "tools", "call", "--config", str(config), "notes", "read_note", '{"title": "groceries"}'
    )
    missing = kosong("tools", "list", "--config", str(config), "files")
    with_token = kosong("tools", "list", "--config", str(config), "--token", "t")
    assert listed.returncode == 0 and listed.stdout == one.stdout, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["read_note", "write_note"]
    assert (called.returncode, called.stdout) == (0, "milk, eggs, rice\n"), called.stderr
    assert _one_clear_line(missing) == (
        "kosong: error: no server 'files' in the mcpServers configuration (its servers: notes)"
    )
    assert "--token, --header and --mcp go with a server URL" in _one_clear_line(with_token)
    config.write_text(json.dumps({"mcpServers": {"bad": {"command": "x", "headers": {}}}}))
    wrong = kosong("tools", "list", "--config", str(config))
    assert _one_clear_line(wrong) == (
        f'kosong: error: {config}: server "bad": "headers" are for a "url"; a "command" takes "env"'
    )
