"""The official MCP conformance suite and the MCP Inspector CLI, against our server and client.

The server is `examples/mcp_conformance_server.py` (the suite's fixture tools as a kosong
toolset) in a child process on a free port; the client is `examples/mcp_conformance_client.py`
(`MCPToolset`, with the MCP SDK's OAuth client provider for the `auth/*` scenarios), which the
suite runs against servers of its own. The suite and the Inspector run on Node 22.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._local import free_port
from tests.mcp._mcp_servers import ROOT, serving_command
from tests.mcp._node_tools import CONFORMANCE, INSPECTOR, NODE, require

pytestmark = pytest.mark.external  # the MCP conformance suite on Node, `kosong serve`

EXPECTED_FAILURES = Path(__file__).parent / "conformance-expected-failures.yml"

# The suite's active scenarios about tools (and the protocol around them): all must pass.
MUST_PASS = {
    "server-initialize", "ping", "logging-set-level", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error",
    "tools-call-with-progress", "tools-call-sampling", "tools-call-elicitation",
    "elicitation-sep1034-defaults", "elicitation-sep1330-enums", "server-sse-multiple-streams",
    "dns-rebinding-protection",
}  # fmt: skip


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    script = ROOT / "examples" / "mcp_conformance_server.py"
    argv = [sys.executable, str(script), "--port", str(port)]
    with serving_command(argv, port) as url:
        yield url


def _suite(server_url: str, *args: str) -> tuple[int, str]:
    require(CONFORMANCE)
    run = subprocess.run(
        [str(NODE), str(CONFORMANCE), "server", "--url", server_url, *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT / ".ci" / "mcp-tools", check=False,
    )  # fmt: skip
    return run.returncode, run.stdout + run.stderr


def test_the_official_conformance_suite_passes_every_tools_scenario(server_url: str) -> None:
    code, output = _suite(server_url, "--expected-failures", str(EXPECTED_FAILURES))
    summary = dict(re.findall(r"^[✓✗] (\S+): (\d+ passed, \d+ failed)", output, re.M))
    assert code == 0, output[-4000:]  # no failure outside the expected ones, none stale
    assert not MUST_PASS - summary.keys(), f"scenarios not run: {MUST_PASS - summary.keys()}"
    failed = {k: v for k, v in summary.items() if k in MUST_PASS and not v.endswith(" 0 failed")}
    assert not failed, failed


def test_json_schema_2020_12_keywords_are_preserved(server_url: str) -> None:
    code, output = _suite(server_url, "--scenario", "json-schema-2020-12")
    assert code == 0, output[-4000:]
    assert "Passed: 4/4, 0 failed, 0 warnings" in output


def test_post_streams_are_primed_with_an_event_and_a_retry_interval(server_url: str) -> None:
    # The scenario opens a 2025-11-25 session, then posts naming 2025-03-26: the priming
    # event and `retry:` follow the version the session negotiated (see `_as_negotiated`).
    code, output = _suite(server_url, "--scenario", "server-sse-polling")
    assert code == 0, output[-4000:]
    assert "Passed: 3/3, 0 failed, 0 warnings" in output, output[-4000:]


def _inspector(server_url: str, *args: str, exit_code: int = 0) -> dict[str, object]:
    require(INSPECTOR)
    run = subprocess.run(
        [str(NODE), str(INSPECTOR), "--cli", server_url, "--transport", "http", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == exit_code, run.stdout + run.stderr
    return json.loads(run.stdout)


def test_the_mcp_inspector_lists_and_calls_our_tools(server_url: str) -> None:
    listed = _inspector(server_url, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}  # type: ignore[index, union-attr]
    assert {"test_simple_text", "test_error_handling", "json_schema_2020_12_tool"} <= names
    called = _inspector(server_url, "--method", "tools/call", "--tool-name", "test_simple_text")
    assert called["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}
    ]
    assert called.get("isError") in (None, False)
    # A tool's failure is a result (printed, exit code 5 "tool_is_error"), not a protocol error.
    failed = _inspector(
        server_url, "--method", "tools/call", "--tool-name", "test_error_handling", exit_code=5
    )
    assert failed["isError"] is True
    assert failed["content"] == [
        {"type": "text", "text": "This tool intentionally returns an error for testing"}
    ]


CLIENT = [sys.executable, str(ROOT / "examples" / "mcp_conformance_client.py")]


def _client_suite(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, list[dict[str, Any]]]]:
    """Run the suite's client mode; its exit code, output, and each scenario's checks."""
    require(CONFORMANCE)
    run = subprocess.run(
        [str(NODE), str(CONFORMANCE), "client", "--command", shlex.join(CLIENT),
         "-o", str(tmp_path), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT / ".ci" / "mcp-tools", check=False,
    )  # fmt: skip
    checks = {
        path.parent.name: json.loads(path.read_text()) for path in tmp_path.glob("*/checks.json")
    }
    return run.returncode, run.stdout + run.stderr, checks


@pytest.mark.parametrize(
    "scenario", ["initialize", "tools_call", "elicitation-sep1034-client-defaults"]
)
def test_our_client_passes_the_suites_client_scenarios(scenario: str, tmp_path: Path) -> None:
    code, output, _ = _client_suite(tmp_path, "--scenario", scenario)
    assert code == 0, output[-4000:]
    assert re.search(r"Passed: (\d+)/\1, 0 failed, 0 warnings", output), output[-4000:]


def test_our_client_resumes_a_dropped_stream_after_the_retry_interval(tmp_path: Path) -> None:
    _, output, checks = _client_suite(tmp_path, "--scenario", "sse-retry")
    status = {c["id"]: c["status"] for scenario in checks.values() for c in scenario}
    assert status["client-sse-graceful-reconnect"] == "SUCCESS", output[-4000:]
    assert status["client-sse-last-event-id"] == "SUCCESS", output[-4000:]
    # Never early; "slightly late" (over 200 ms) is the suite's warning for a loaded machine,
    # not a failure: the client waited for the server's `retry:` (500 ms) either way.
    assert status["client-sse-retry-timing"] in ("SUCCESS", "WARNING"), output[-4000:]


def test_our_client_signs_in_with_the_sdks_oauth_provider_in_every_auth_scenario(
    tmp_path: Path,
) -> None:
    # Discovery (protected-resource and authorization-server metadata), dynamic registration,
    # PKCE, scopes from the challenge, step-up, token endpoint authentication, refresh...
    # against the suite's own authorization server. The baseline names the scenarios that
    # need what an application configures around the client, and why.
    code, output, _ = _client_suite(
        tmp_path, "--suite", "auth", "--expected-failures", str(EXPECTED_FAILURES)
    )
    assert code == 0, output[-4000:]
    assert "auth/metadata-default: 14 passed, 0 failed" in output
    assert "auth/scope-step-up: 21 passed, 0 failed" in output


def test_the_mcp_inspector_reads_our_structured_output(tmp_path: Path) -> None:
    # Served by `kosong mcp --http` from an async factory in a file, as users would.
    port = free_port()
    target = f"{ROOT / 'tests' / 'mcp' / '_structured_tools.py'}:make_tools"
    argv = [sys.executable, "-m", "kosong", "mcp", target, "--http", "--port", str(port)]
    with serving_command(argv, port) as url:
        listed = _inspector(url, "--method", "tools/list")
        called = _inspector(
            url, "--method", "tools/call", "--tool-name", "weather", "--tool-arg", "city=Oslo"
        )
        counted = _inspector(
            url, "--method", "tools/call", "--tool-name", "count", "--tool-arg", 'words=["a","b"]'
        )
    tools = {t["name"]: t for t in listed["tools"]}  # type: ignore[union-attr]
    assert tools["weather"]["outputSchema"]["required"] == ["city", "temperature", "conditions"]
    assert tools["weather"]["annotations"] == {"title": "Weather", "readOnlyHint": True}
    assert tools["count"]["outputSchema"] == {
        "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"],
        "x-fastmcp-wrap-result": True,  # the wrap marked, as FastMCP marks it
    }  # fmt: skip
    weather = {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
    assert called["structuredContent"] == weather
    text = json.dumps(weather, separators=(",", ":"))
    assert called["content"] == [{"type": "text", "text": text}]
    assert counted["structuredContent"] == {"result": 2}
