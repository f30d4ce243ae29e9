"""`RemoteToolset`: the tools of a kosong server, used as if they were local.

    async with RemoteToolset("http://127.0.0.1:8000", token="s3cret") as remote:
        toolset = with_policies(remote, TimeoutPolicy(30))   # local policies around them
        result = await toolset.handle(call)

The definitions come from the server's `GET /tools` (`refresh()`, done on entering the
`async with`). Each call is a run streamed over SSE (`POST /tools/{name}/sse`): its progress
reaches `report_progress` here, so a local pipeline's events show it; when the connection
drops, the call is resumed from the last event received (`Last-Event-ID` on `GET
/runs/{id}`), so no event is lost or repeated and the tool is not run twice. A call cancelled
here is cancelled on the server (`DELETE /runs/{id}`). Like every toolset, `handle()` never
raises: a server that cannot be reached, or that lost the run, gives a `NETWORK_ERROR` result.
It is a `BaseToolset`: a call is resolved against the tools listed last (a tool not listed is
`TOOL_NOT_FOUND` here, without a request) and its parsed arguments are the request's body.

A call with `extras["idempotency_key"]` sends it as the `Idempotency-Key` header: the server
runs the tool at most once for that key, and a call made again with it (after a failure, from
another client) gets the same run and its result.

Needs httpx and httpx-sse (the `remote` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any, Self
from urllib.parse import quote

from kosong._extras import install_hint
from kosong.message import ToolCall
from kosong.standard import coded_error, current_trace_id, from_envelope, report_progress
from kosong.tooling import BaseToolset, Tool, ToolResult, ToolReturnValue
from kosong.tooling.error import describe_exception
from kosong.utils.typing import JsonType

try:
    import httpx
    from httpx_sse import EventSource, SSEError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"RemoteToolset needs httpx and httpx-sse: {install_hint('remote')}") from e

__all__ = ["RemoteToolset"]

logger = logging.getLogger(__name__)


class _Lost(Exception):
    """The connection dropped before the final event; resume."""


class RemoteToolset(BaseToolset):
    """A `Toolset` whose tools run on a kosong server; see the module doc."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        reconnects: int = 5,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """Use the server at `url` (its base, e.g. `http://127.0.0.1:8000`).

        Args:
            url: The server's base URL.
            token: The bearer token, if the server wants one.
            headers: More headers for every request.
            reconnects: How many times in a row a dropped call is resumed before giving up
                (the count starts again whenever an event arrives).
            connect_timeout: Seconds to wait for a connection.
            read_timeout: Seconds of silence after which a stream counts as dropped (the
                server sends keep-alives more often than that).
            client: An httpx client to use (and not close); by default one of its own.
        """
        self.url = url.rstrip("/")
        """The server's base URL."""
        self._headers = dict(headers or {})
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._reconnects = reconnects
        self._timeout = httpx.Timeout(connect_timeout, read=read_timeout)
        self._client = client
        self._own_client = client is None
        self._tools: dict[str, Tool] = {}
        self._version = object()

    @classmethod
    async def connect(cls, url: str, **options: Any) -> Self:
        """A `RemoteToolset` with its tools listed (`refresh()` done)."""
        toolset = cls(url, **options)
        await toolset.refresh()
        return toolset

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, headers=self._headers)
        return self._client

    async def __aenter__(self) -> Self:
        await self.refresh()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections (of the client made here)."""
        if self._own_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def refresh(self) -> list[Tool]:
        """Fetch the tools' definitions from the server; they are `tools` from now on.

        Raises:
            httpx.HTTPError: the server could not be reached or refused (401, 421...).
        """
        response = await self._http().get(f"{self.url}/tools", headers=self._headers)
        response.raise_for_status()
        tools: dict[str, Tool] = {}
        for definition in response.json()["tools"]:
            try:
                tool = Tool.model_validate(definition)
            except ValueError as e:
                logger.warning("Skipping a tool definition of %s: %s", self.url, e)
                continue
            tools[tool.name] = tool
        self._tools = tools
        self._version = object()
        return list(tools.values())

    @property
    def tools(self) -> list[Tool]:
        """The definitions fetched by the last `refresh()` (none before)."""
        return list(self._tools.values())

    @property
    def tools_version(self) -> object:
        """A new value at each `refresh()`."""
        return self._version

    def find_tool(self, name: str) -> Tool | None:
        """The definition of the tool called `name`, as last fetched, or None."""
        return self._tools.get(name)

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Run the call on the server, the parsed arguments sent as the request's JSON body."""
        body = json.dumps(arguments, ensure_ascii=False, separators=(",", ":")).encode()
        run: list[str | None] = [None, None]  # run path, last event id
        try:
            return ToolResult(call.id, await self._run(call, body, run))
        except asyncio.CancelledError:
            if run[0] is not None:  # `_cancel` never raises
                await asyncio.shield(self._cancel(run[0]))
            raise
        # ValueError: an event that is not JSON (or not an envelope); AttributeError: not an object
        except (httpx.HTTPError, SSEError, _Lost, ValueError, AttributeError) as e:
            text = f"the call to `{tool.name}` on {self.url} failed: {describe_exception(e)}"
            return ToolResult(call.id, coded_error("NETWORK_ERROR", text, retryable=True))

    async def _cancel(self, run_path: str) -> None:
        # RuntimeError: the client was closed meanwhile.
        with contextlib.suppress(httpx.HTTPError, TimeoutError, RuntimeError):
            await asyncio.wait_for(self._http().delete(f"{self.url}{run_path}"), 5)

    async def _run(self, call: ToolCall, body: bytes, run: list[str | None]) -> ToolReturnValue:
        client = self._http()
        name = call.function.name
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        trace = current_trace_id()
        if trace:
            headers["X-Trace-Id"] = trace
        key = call.extras.get("idempotency_key") if call.extras else None
        if isinstance(key, str) and key:
            headers["Idempotency-Key"] = key
        failures = 0
        delay = 1.0
        progress = 0.0
        while True:
            if run[1] is None:
                request = client.build_request(
                    "POST", f"{self.url}/tools/{quote(name, safe='')}/sse",
                    content=body,
                    headers={**headers, "Content-Type": "application/json"},
                )  # fmt: skip
            else:
                request = client.build_request(
                    "GET", f"{self.url}{run[0]}", headers={**headers, "Last-Event-ID": run[1]}
                )
            try:
                response = await client.send(request, stream=True)
                try:
                    if response.status_code == 204:
                        raise _Lost("the server says the run has no more events")
                    if response.status_code != 200:
                        await response.aread()
                        return _refusal(response, resumed=run[1] is not None)
                    run[0] = response.headers.get("content-location") or run[0]
                    async for sse in EventSource(response).aiter_sse():
                        if sse.retry is not None:
                            delay = sse.retry / 1000
                        if sse.id:
                            run[1] = sse.id
                        if not sse.data:
                            continue
                        failures = 0
                        data = json.loads(sse.data)
                        if sse.event in ("tool_result", "tool_error"):
                            return from_envelope(data, tool_call_id=call.id).return_value
                        if sse.event == "tool_progress":
                            progress = _report(data.get("progress"), data.get("message"), progress)
                        elif sse.event == "tool_retrying":
                            count, most = data.get("retry_count"), data.get("max_retries")
                            _report(progress, f"retrying ({count}/{most})", progress)
                    raise _Lost("the stream ended before the final event")
                finally:
                    await response.aclose()
            except (httpx.TransportError, SSEError, _Lost) as e:
                failures += 1
                if run[0] is None or failures > self._reconnects:
                    raise
                logger.info("Resuming %s of %s after: %s", run[0], name, describe_exception(e))
                await asyncio.sleep(min(delay * failures, 10.0))


def _report(progress: Any, message: Any, last: float) -> float:
    """Pass progress on to the local pipeline (if any); the progress now.

    An event without a percentage (no `progress`) is passed on as such, with its message.
    """
    if progress is None:
        report_progress(None, str(message or ""))
        return last
    if isinstance(progress, int | float) and not isinstance(progress, bool):
        with contextlib.suppress(ValueError):
            report_progress(float(progress), str(message or ""))
            return float(progress)
    return last


def _refusal(response: httpx.Response, *, resumed: bool) -> ToolReturnValue:
    """The error value of a response the server answered with an error status."""
    said: object = None
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
        said = error.get("retryable")
    except (ValueError, KeyError, TypeError):  # not JSON, or not an error envelope
        code, message = "NETWORK_ERROR", f"HTTP {response.status_code}: {response.text[:200]}"
    if resumed and response.status_code == 404:
        code, message, said = "NETWORK_ERROR", f"the server lost the run: {message}", None
    try:
        # What the envelope says; without it, what the catalog says of the code.
        retryable = said if isinstance(said, bool) else None
        return coded_error(code, message, retryable=retryable)
    except ValueError:  # not a code of the standard's form
        return coded_error("EXECUTION_ERROR", f"{code}: {message}")
