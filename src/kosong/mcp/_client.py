"""`MCPToolset`: the tools of one or more MCP servers, as a kosong toolset.

    async with MCPToolset({"weather": "http://127.0.0.1:8000/mcp",
                           "files": ["python", "-m", "files_server"]}) as toolset:
        result = await toolset.handle(call)

- A server is a URL (streamable HTTP, where the SDK negotiates the 2026 era or the handshake;
  or the legacy HTTP+SSE transport, for a URL ending in `/sse`) or a command run over stdio
  (a list of arguments, a command line, or `StdioServerParameters`), or a `ServerSpec` that
  adds credentials (`headers`, an `httpx2.Auth` or `httpx.Auth` such as the MCP SDK's OAuth
  client provider) or the command's `env` and `cwd`. `MCPToolset.from_config(path)` reads
  the `mcpServers` file MCP clients keep. A server that refuses
  the credentials (401 or 403) fails the connection with an error saying "unauthorized" and
  what to pass, and a call with an `UNAUTHORIZED` or `PERMISSION_DENIED` result.
- A server may ask back while a call runs (either era): `elicitation` answers its questions
  for the user, `sampling` its requests for a completion (with the user's `ChatProvider`, or a
  callback), `roots` lists the directories it may use. Only what is given is announced.
- Each server's tools are listed as ours. A name two servers share is prefixed with each
  server's name (`weather_search`, `files_search`) rather than one overwriting the other; a
  name kosong's tool-name rule does not allow is rewritten to one it does.
- Arguments are checked against the tool's input schema before they are sent; the result's
  content is what the model reads (text, or content parts: images and audio as `data:` URLs),
  its structured content the result's `structured_data` (the envelope's `data`), `isError` a
  `ToolError` (with the error code a kosong server sent), and the raw `CallToolResult` the
  result's `artifact`. A tool a 2025-11-25 server runs only as a task (`taskSupport:
  "required"`) is called as one and followed to its result.
- Progress notifications reach `report_progress`, so a pipeline's `stream()` yields them as
  `tool_progress` events. `call_timeout` is sent to the server as a cancellation when it runs
  out (a `ToolTimeoutError` for the model), and so is the cancellation of a call (a
  `TimeoutPolicy`'s, say).
- `tools/list_changed` (either era) refreshes the tools.
- Each server's connection runs in a supervising task of its own: a server that dies fails its
  pending calls within a second (its transport breaks; a handshake-era server that stops
  answering, when a ping goes unanswered) with a `ToolNetworkError` result while the other
  servers keep working, and the next call to it reconnects.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal, Self

import jsonschema_rs
import mcp_types as mcp
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import PrivateAttr, ValidationError, model_validator

from kosong import _telemetry
from kosong._seconds import optional_seconds, positive_seconds
from kosong.mcp._answering import (
    ElicitationCallback,
    RootsSpec,
    SamplingSpec,
    asking,
    roots_of,
)
from kosong.mcp._config import entry_spec, read_config
from kosong.mcp._connection import Connection, ServerGone
from kosong.mcp._convert import from_call_tool_result, unwrapped_schema
from kosong.mcp._runs import IDEMPOTENCY_META
from kosong.mcp._spec import ServerSpec, ServerTarget
from kosong.message import ToolCall
from kosong.standard import CallContext, current_call
from kosong.tooling import BaseToolset, Tool, ToolError, ToolResult, ToolReturnValue
from kosong.tooling.error import (
    ToolNetworkError,
    ToolNotFoundError,
    ToolPermissionDeniedError,
    ToolTimeoutError,
    ToolUnauthorizedError,
    ToolValidateError,
    describe_exception,
)
from kosong.utils.typing import JsonType

__all__ = ["MCPTool", "MCPToolset"]

logger = logging.getLogger(__name__)

_SERVER_NAME = re.compile(r"\A[a-zA-Z_][a-zA-Z0-9_-]{0,31}\Z")
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class MCPTool(Tool):
    """A tool of an MCP server, as `MCPToolset` lists it: the toolset's `call_tool` calls it."""

    output_schema: dict[str, Any] | None = None
    """The schema of the tool's typed value (`structured_data`), when the server declares
    one; a `{"result": ...}` wrapper the server marked is taken off, as from the value."""
    server: str = ""
    """The name of the server (in its `MCPToolset`) the tool belongs to."""
    remote_name: str = ""
    """The tool's name on the server (this tool's `name` may be prefixed or rewritten)."""
    task_support: Literal["forbidden", "optional", "required"] | None = None
    """Whether the server runs the tool as an MCP task (2025-11-25 `execution.taskSupport`):
    `"required"` tools are always called as tasks, `"optional"` ones when the toolset says."""

    _validator: jsonschema_rs.Validator = PrivateAttr()

    @model_validator(mode="after")
    def _build_validator(self) -> Self:
        self._validator = jsonschema_rs.validator_for(self.parameters, offline=True)
        return self

    def check_arguments(self, arguments: JsonType) -> ToolValidateError | None:
        """Why `arguments` do not fit the tool's input schema (up to 3 reasons), or None."""
        errors = [
            f"{'/'.join(map(str, e.instance_path)) or 'arguments'}: {e.message}"
            for e in islice(self._validator.iter_errors(arguments), 3)
        ]
        return ToolValidateError("; ".join(errors)) if errors else None


@dataclass(frozen=True, slots=True)
class _Remote:
    """What calling one listed tool takes: its server's connection and how to call it there."""

    tool: MCPTool
    connection: Connection
    wrapped: bool  # its output schema was `{"result": ...}`, taken off the value
    as_task: bool


class MCPToolset(BaseToolset):
    """The tools of MCP servers as one toolset (see the module doc).

    Use it as an async context manager (or `await connect()` ... `await aclose()`): entering
    connects to every server and lists its tools. A server that cannot be reached then is left
    out and named in `errors`; `refresh()` tries again.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerTarget | Mapping[str, Any]],
        *,
        call_timeout: float | None = None,
        connect_timeout: float = 10.0,
        on_tools_changed: Callable[[], None] | None = None,
        elicitation: ElicitationCallback | None = None,
        sampling: SamplingSpec | None = None,
        roots: RootsSpec | None = None,
        tasks: Literal["required", "optional"] = "required",
    ) -> None:
        """Prepare connections to `servers`, by name; nothing is started yet.

        Args:
            servers: The servers by name (the name prefixes clashing tool names): each a
                `ServerSpec`, an `http(s)://` URL, a command line or list of arguments,
                `StdioServerParameters`, or an `mcpServers` entry (`{"command", "args",
                "env"}` or `{"url", "headers"}`: `MCPToolset(config["mcpServers"])` works).
            call_timeout: Seconds a call may take before it is cancelled on the server.
            connect_timeout: Seconds a connection may take to open.
            on_tools_changed: Called after the tools changed (a server said so, or
                reconnected), once the new list is in place.
            elicitation: Asks the user when a server's tool asks (`ElicitationRequest` in,
                `ElicitAnswer` or the MCP `ElicitResult` out), in form and URL modes.
            sampling: Answers a server's request for a completion: the user's `ChatProvider`,
                or an async callback (`SamplingRequest` in; text, a `Message` or the MCP
                `CreateMessageResult` out).
            roots: The directories servers may work in: `file://` URIs or absolute paths.
            tasks: Which tools of a 2025-11-25 server to call as MCP tasks: those whose
                `execution.taskSupport` is `"required"` (they cannot be called otherwise), or
                also those where it is `"optional"`. A task is followed to its result, with its
                status as progress, and cancelled on the server with its caller.

        Raises:
            ValueError: a server name is not a short identifier, a spec is empty, a root is
                neither a URI nor an absolute path, or a timeout is not a positive number.
            TypeError: a server is none of the accepted kinds.
        """
        optional_seconds(call_timeout, "call_timeout")
        positive_seconds(connect_timeout, "connect_timeout")
        if not servers:
            raise ValueError("MCPToolset needs at least one server")
        offered = None if roots is None else roots_of(roots)
        self._connections: dict[str, Connection] = {}
        for name, target in servers.items():
            if not _SERVER_NAME.match(name):
                raise ValueError(
                    f"server name {name!r} must start with a letter or `_` and hold only letters, "
                    "digits, `_` and `-` (at most 32): it prefixes tool names"
                )
            try:
                if isinstance(target, Mapping):  # an `mcpServers` entry, as config files hold
                    spec = entry_spec(target, f'server "{name}"')
                else:
                    spec = ServerSpec.of(target)
            except ValueError as e:
                raise ValueError(f"MCP server {name!r}: {e}") from None
            self._connections[name] = Connection(
                name,
                spec,
                connect_timeout=connect_timeout,
                on_tools_changed=self._tools_changed,
                asking=asking(name, elicitation, sampling, offered),
            )
        if tasks not in ("required", "optional"):
            raise ValueError(f'tasks must be "required" or "optional", got {tasks!r}')
        self._tasks = tasks
        self._call_timeout = call_timeout
        self._on_tools_changed = on_tools_changed
        self._listed: dict[str, list[mcp.Tool]] = {}
        self._remotes: dict[str, _Remote] = {}
        self._version = object()  # a new one at each listing: see `tools_version`
        self._refreshing: set[asyncio.Task[None]] = set()

    @classmethod
    def from_config(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any],
        *,
        only: Sequence[str] | None = None,
        **options: Any,
    ) -> MCPToolset:
        """The servers of an `mcpServers` file (a path, or its parsed JSON).

        The file is the one Claude Desktop, Cursor, VS Code and FastMCP keep. Each entry is a
        `command` (with `args`, `env`, `cwd`) or a `url` (with `headers`), with `type` /
        `transport` where given; `${VAR}` (also `${env:VAR}`, `${VAR:-default}`) is the
        environment variable; `"disabled": true` leaves an entry out. `options` are the
        constructor's (`call_timeout`, `elicitation`...); `only` keeps the servers of those
        names.

        Raises:
            ValueError: the file cannot be read, an entry is wrong (the message names the
                file, the entry and what to write), or `only` names a server it does not have.
        """
        servers = read_config(source)
        if only is not None:
            missing = [name for name in only if name not in servers]
            if missing:
                raise ValueError(
                    f"no server {missing[0]!r} in the mcpServers configuration (its servers: "
                    f"{', '.join(servers)})"
                )
            servers = {name: servers[name] for name in only}
        return cls(servers, **options)

    # --- lifecycle -------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect to every server and list its tools (those that fail are in `errors`)."""
        await self.refresh()

    async def aclose(self) -> None:
        """Close every connection; calls still pending fail with a result."""
        for task in list(self._refreshing):
            task.cancel()
        await asyncio.gather(*(c.close() for c in self._connections.values()))

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the Toolset protocol --------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        """Every server's tools, under the names the model calls them by."""
        return [remote.tool for remote in self._remotes.values()]

    @property
    def tools_version(self) -> object:
        """New whenever a server's tools were listed again."""
        return self._version

    def find_tool(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        remote = self._remotes.get(name)
        return remote.tool if remote is not None else None

    async def call_tool(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolResult:
        """Run one call: its arguments checked against the tool's schema, then sent.

        Its idempotency key (`extras["idempotency_key"]`) goes along in `_meta`.
        """
        with _telemetry.MCPClientCall(call) as traced:  # its span, or the call's own
            result = ToolResult(call.id, await self._call(call, tool, arguments))
            traced.finish(result)
            return result

    async def _call(self, call: ToolCall, tool: Tool, arguments: JsonType) -> ToolReturnValue:
        """Send `tools/call` to the tool's server; every failure is a result."""
        remote = self._remotes.get(tool.name)
        if remote is None:  # gone since the call was resolved
            return ToolNotFoundError(tool.name)
        invalid = remote.tool.check_arguments(arguments)
        if invalid is not None:
            return invalid
        if not isinstance(arguments, dict):
            return ToolValidateError("the arguments of an MCP tool are a JSON object")
        connection, name = remote.connection, remote.tool.remote_name
        key = call.extras.get("idempotency_key") if call.extras else None
        # Progress is asked of the server only inside a pipeline, where it has somewhere to go.
        ctx = current_call()
        try:
            result = await connection.call(
                name, arguments, read_timeout=self._call_timeout,
                progress=_forward_progress(ctx) if ctx is not None else None,
                meta=_telemetry.carry_context(  # the trace context goes along in _meta
                    {IDEMPOTENCY_META: key} if isinstance(key, str) and key else None,
                    connection.spec.where,
                ),
                as_task=remote.as_task,
            )  # fmt: skip
        except ServerGone as e:
            if e.auth is None:
                return ToolNetworkError(str(e))
            if e.auth.status == 403:
                return ToolPermissionDeniedError(tool.name, str(e))
            return ToolUnauthorizedError(str(e))
        except MCPError as e:
            if e.code == mcp.REQUEST_TIMEOUT and self._call_timeout is not None:
                return ToolTimeoutError(tool.name, self._call_timeout)
            return ToolError(
                message=f"The MCP server `{connection.name}` refused the call to `{name}`: "
                f"{e.message} (error {e.code})",
                brief="MCP error",
            )
        except (ValidationError, RuntimeError) as e:  # the SDK refused the answer's shape
            return ToolError(
                message=f"The answer of the MCP server `{connection.name}` to `{name}` could "
                f"not be used: {describe_exception(e)}",
                brief="MCP error",
            )
        return from_call_tool_result(result, remote.wrapped)

    # --- the servers -----------------------------------------------------------------------

    @property
    def errors(self) -> dict[str, str]:
        """Why each server that is not working now failed, by server name."""
        return {
            name: connection.last_error
            for name, connection in self._connections.items()
            if connection.last_error is not None
        }

    async def refresh(self, server: str | None = None) -> None:
        """List the tools of `server` (or of every server) again.

        Raises:
            KeyError: no server has that name.
        """
        if server is not None and server not in self._connections:
            raise KeyError(f"no MCP server named {server!r} in this toolset")
        names = [server] if server is not None else list(self._connections)
        listings = await asyncio.gather(
            *(self._connections[name].list_tools() for name in names), return_exceptions=True
        )
        for name, listing in zip(names, listings, strict=True):
            if isinstance(listing, ServerGone):
                logger.warning("MCP server %r: %s", name, listing)
                self._listed.pop(name, None)
            elif isinstance(listing, BaseException):
                raise listing
            else:
                self._listed[name] = listing
        self._rebuild()

    def _tools_changed(self, connection: Connection) -> None:
        task = asyncio.get_running_loop().create_task(self._refresh_one(connection.name))
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)

    async def _refresh_one(self, name: str) -> None:
        await self.refresh(name)
        if self._on_tools_changed is not None:
            try:
                self._on_tools_changed()
            except Exception:  # boundary: the listener's failure is not the toolset's
                logger.exception("on_tools_changed callback failed")

    def _rebuild(self) -> None:
        """Make the tools anew from the listings (a call in flight keeps its tool).

        Each gets its own name, prefixed by its server's where servers share one.
        """
        listed = [
            (_tool_name(remote.name), remote, self._connections[server])
            for server, remotes in self._listed.items()
            for remote in remotes
        ]
        counts = Counter(name for name, _, _ in listed)
        taken: set[str] = set()
        remotes: dict[str, _Remote] = {}
        for name, remote, connection in listed:
            if counts[name] > 1:
                name = _tool_name(f"{connection.name}_{remote.name}")
                logger.info(
                    "MCP tool %r of server %r is listed as %r: another server has a tool of "
                    "that name",
                    remote.name,
                    connection.name,
                    name,
                )
            unique, n = name, 2
            while unique in taken:
                unique = _tool_name(f"{name}_{n}")
                n += 1
            taken.add(unique)
            try:
                remotes[unique] = self._remote(unique, remote, connection)
            except ValidationError as e:
                logger.warning(
                    "MCP server %r: tool %r left out, its definition is not usable: %s",
                    connection.name,
                    remote.name,
                    e,
                )
        self._remotes = remotes
        self._version = object()

    def _remote(self, name: str, listed: mcp.Tool, connection: Connection) -> _Remote:
        hints = listed.annotations or mcp.ToolAnnotations()
        title = listed.title or hints.title
        output_schema, wrapped = unwrapped_schema(listed.output_schema)
        support = listed.execution.task_support if listed.execution else None
        tool = MCPTool(
            name=name,
            description=listed.description or title or listed.name,
            parameters=listed.input_schema,
            output_schema=output_schema,
            server=connection.name,
            remote_name=listed.name,
            title=title if title and title.strip() else None,
            read_only_hint=hints.read_only_hint,
            # Meaningful only for a tool that is not read-only (MCP), and kosong refuses both.
            destructive_hint=None if hints.read_only_hint else hints.destructive_hint,
            idempotent_hint=hints.idempotent_hint,
            open_world_hint=hints.open_world_hint,
            task_support=support,
        )
        as_task = support == "required" or (support == "optional" and self._tasks == "optional")
        return _Remote(tool, connection, wrapped, as_task)


def _tool_name(raw: str) -> str:
    """`raw` as a kosong tool name (`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`), unchanged if it is one."""
    name = _NOT_NAME.sub("_", raw) or "_"
    if not (name[0].isalpha() or name[0] == "_"):
        name = f"_{name}"
    if len(name) > 64:  # kept apart from other long names by a digest of the whole
        name = f"{name[:55]}_{hashlib.blake2b(raw.encode(), digest_size=4).hexdigest()}"
    return name


def _forward_progress(ctx: CallContext) -> ProgressFnT:
    """MCP progress as kosong's: a percentage of the total; without one (a growing count), none."""

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        if not total:
            ctx.report_progress(None, message or "")
            return
        percent = progress / total * 100
        if math.isfinite(percent):
            ctx.report_progress(min(max(percent, 0.0), 100.0), message or "")

    return forward
