"""Tools from plain functions: `@tool` and `FunctionTool.from_function`.

```python
from kosong.tooling import tool

@tool
def multiply(a: int, b: int) -> int:
    \"\"\"Multiply two numbers.\"\"\"
    return a * b
```

`multiply` is a `FunctionTool`: a `CallableTool2` whose flat JSON Schema and argument validator
are read from the signature, once, when the tool is made (the parameters model, `params`, when
first read). Every toolset runs it like any other tool; `invoke` and `ainvoke` call it directly
with a dict of arguments. See docs/function-tools.md for the rules (types, descriptions, return
values, errors).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import replace
from types import CoroutineType
from typing import Any, overload

from pydantic import BaseModel, PrivateAttr, ValidationError
from typing_extensions import Unpack

from kosong.tooling._call_checks import (
    deferred_to_caller,
    jsonschema_errors_text,
    pydantic_errors_text,
)
from kosong.tooling._function._build import (
    AnyFunction,
    ResponseFormat,
    Runner,
    ToolOptions,
    injecting_bind,
    make,
)
from kosong.tooling._function._outcome import (
    ToolErrorHandler,
    ToolException,
)
from kosong.tooling._function._parameters import SchemaMismatch
from kosong.tooling._function._signature import Injected
from kosong.tooling._model_tool import CallableTool2
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._schema import schema_validator
from kosong.tooling._tool import Tool
from kosong.tooling.error import ToolValidateError
from kosong.utils.typing import JsonType

__all__ = [
    "FunctionTool",
    "Injected",
    "ResponseFormat",
    "ToolErrorHandler",
    "ToolException",
    "ToolOptions",
    "tool",
]


class FunctionTool(CallableTool2[BaseModel]):
    """A tool made from a function (sync, async or both), by `@tool` or `from_function`.

    It is a `CallableTool2`, so toolsets run it like any other: `call(arguments)` validates the
    arguments, runs the function (an async one is awaited, a sync one runs in a worker thread),
    and turns what it returns into a `ToolReturnValue`. A `ToolException` becomes a `ToolError`
    the model reads; any other exception propagates to the toolset, which reports a
    `ToolRuntimeError` (type and message, no traceback). `invoke` and `ainvoke` call the
    function directly and give back what it returned.
    """

    return_direct: bool = False
    """Whether the agent loop should hand the result to the user as is, ending its turn."""
    response_format: ResponseFormat = "content"
    """`"content_and_artifact"` when the function returns `(content, artifact)`."""

    _runner: Runner = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        raise TypeError("make a FunctionTool with @tool or FunctionTool.from_function(...)")

    @classmethod
    def from_function(
        cls,
        func: AnyFunction | None = None,
        *,
        coroutine: Callable[..., Awaitable[Any]] | None = None,
        **options: Unpack[ToolOptions],
    ) -> FunctionTool:
        """Make a tool from a sync function, an async one (`coroutine`), or both.

        The schema, name and description come from `func` if given, else from `coroutine`.
        Toolsets and `ainvoke` use `coroutine` when there is one; `invoke` uses `func`.

        Raises:
            ValueError: a bad name, no description, an unusable docstring with
                `parse_docstring=True`, or a bad option value.
            TypeError: a parameter JSON Schema cannot describe, `*args`, or a function that
                does not fit `args_schema` / `schema`.
        """
        fields, parameters, runner = make(func, coroutine, options)
        tool = cls.model_construct(**fields)
        tool._base = Tool.model_construct(
            name=tool.name, description=tool.description, parameters=parameters,
            **tool.metadata(),
        )  # fmt: skip
        if tool.strict:
            tool._strict_validator = schema_validator(parameters)
        tool._runner = runner
        return tool

    @property
    def func(self) -> AnyFunction | None:
        """The sync function, if the tool has one."""
        return self._runner.func

    @property
    def coroutine(self) -> Callable[..., Awaitable[Any]] | None:
        """The async function, if the tool has one."""
        return self._runner.coroutine

    @property
    def handle_tool_error(self) -> ToolErrorHandler:
        """What a `ToolException` gives.

        In a toolset it is always a ToolError; its text is the exception's (False or True),
        this string, or what this callable returns. `invoke`/`ainvoke` raise the exception
        when this is False and return that text otherwise.
        """
        return self._runner.handler

    @property
    def args(self) -> dict[str, Any]:
        """The properties of the parameters schema: parameter name -> its JSON Schema."""
        return self.base.parameters.get("properties", {})

    @property
    def injected(self) -> frozenset[str]:
        """The names of the parameters the application supplies (see `inject`)."""
        return self._runner.injected

    def inject(self, **values: Any) -> FunctionTool:
        """A copy of this tool whose injected parameters get `values`; this one is unchanged.

        Raises:
            TypeError: a name is not an injected parameter of the function.
        """
        run = self._runner
        unknown = sorted(set(values) - run.injected)
        if unknown:
            raise TypeError(
                f"tool `{self.name}` has no injected parameter {', '.join(map(repr, unknown))}"
                f" (injected: {', '.join(sorted(run.injected)) or 'none'})"
            )
        bound = {**run.bound, **values}
        copy = self.model_copy()
        copy._runner = replace(run, bound=bound, bind=injecting_bind(run, bound))
        return copy

    def call(self, arguments: JsonType) -> CoroutineType[Any, Any, ToolReturnValue]:
        """Validate `arguments`, run the function, and return its result as a ToolReturnValue.

        Awaited like any tool's `call`. It hands back the run's own coroutine (or, for arguments
        refused, one that gives the error), so a call in flight keeps no frame of this method.
        """
        # Read once: pydantic finds a private attribute in Python code (a microsecond a read).
        run = self._runner
        checked = self._checked(run, arguments)
        if isinstance(checked, ToolValidateError):
            return _given(checked)
        if self.external:
            return _given(deferred_to_caller(self.name))
        return run.execute(checked)

    def _checked(self, run: Runner, arguments: JsonType) -> dict[str, Any] | ToolValidateError:
        """The function's keyword arguments, or why `arguments` are refused."""
        if self.strict and self._strict_validator is not None:
            unknown = jsonschema_errors_text(self._strict_validator, arguments, only_unknown=True)
            if unknown:
                return ToolValidateError(unknown)
        try:
            return run.bind(run.checked(arguments))
        except ValidationError as e:
            return ToolValidateError(pydantic_errors_text(e, list(self.args)))
        except SchemaMismatch as e:
            return ToolValidateError(str(e))

    async def __call__(self, params: BaseModel) -> ToolReturnValue:
        """Run the function on arguments already validated into `params`."""
        run = self._runner
        return await run.execute(run.bind(params))

    def invoke(self, args: Mapping[str, Any]) -> Any:
        """Call the tool with `args` and return what the function returned.

        A sync function runs in this thread. An async-only tool is run with `asyncio.run`
        when no event loop is running here; inside a running loop that would block the loop,
        so it raises NotImplementedError (a RuntimeError): use `await tool.ainvoke(args)`.
        With `response_format="content_and_artifact"` only the content is returned (the
        artifact is on the result of `call`).

        Raises:
            ValueError: the arguments do not fit the schema (pydantic's ValidationError, or a
                ValueError for a tool with an explicit `schema`).
            ToolException: the function raised one and `handle_tool_error` is False.
        """
        run = self._runner
        kwargs = run.bind(run.checked(dict(args)))
        if run.func is None:
            return _run_without_loop(self.name, lambda: run.raw(kwargs))
        try:
            value = run.func(**kwargs)
        except ToolException as e:
            return run.handled(e)
        if inspect.isawaitable(value):  # a sync wrapper of an async function
            awaitable: Awaitable[Any] = value
            try:
                return _run_without_loop(self.name, lambda: _settled(awaitable, run))
            except NotImplementedError:
                if inspect.iscoroutine(awaitable):
                    awaitable.close()  # never to be awaited: say so now, not at collection
                raise
        return run.content(value)

    async def ainvoke(self, args: Mapping[str, Any]) -> Any:
        """Call the tool with `args` and return what the function returned (see `invoke`).

        The async function is awaited; a sync-only tool runs in a worker thread.
        """
        run = self._runner
        return await run.raw(run.bind(run.checked(dict(args))))

    def _made_params(self) -> type[BaseModel]:
        return self._runner.params()


# `params`, the pydantic model of the arguments, is made when first read (then kept in the
# tool's `__dict__`, as any field): calls are validated without it, by a validator of the same
# types, and a model class costs more memory and time than the rest of the tool together. Set
# on the class once pydantic has made it, so pydantic does not take it for a default.
_lazy_params = functools.cached_property(vars(FunctionTool)["_made_params"])
_lazy_params.__set_name__(FunctionTool, "params")
type.__setattr__(FunctionTool, "params", _lazy_params)


async def _given(value: ToolReturnValue) -> ToolReturnValue:
    return value


def _run_without_loop(name: str, work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """`asyncio.run(work())` for `invoke`, which must not block a loop running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work())
    raise NotImplementedError(
        f"tool `{name}` is async (or returns an awaitable) and an event loop is running in "
        f"this thread; use `await {name}.ainvoke(...)`"
    )


async def _settled(value: Awaitable[Any], run: Runner) -> Any:
    """What an awaitable a sync function returned gives, as `invoke` returns it."""
    try:
        while inspect.isawaitable(value):
            value = await value
    except ToolException as e:
        return run.handled(e)
    return run.content(value)


@overload
def tool(func: AnyFunction, /) -> FunctionTool: ...
@overload
def tool(name: str, /, **options: Unpack[ToolOptions]) -> Callable[[AnyFunction], FunctionTool]: ...
@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[AnyFunction], FunctionTool]: ...
def tool(
    name_or_func: str | AnyFunction | None = None, /, **options: Unpack[ToolOptions]
) -> FunctionTool | Callable[[AnyFunction], FunctionTool]:
    """Make a `FunctionTool` from the decorated function (sync or async).

    Bare (`@tool`), with the tool's name (`@tool("multiplication-tool")`), or with options
    (`@tool(parse_docstring=True, return_direct=True)`; see `ToolOptions`), including every
    metadata field a class-based tool can declare (`title`, `read_only_hint`, `version`,
    `cacheable`, `deprecated`, `output_schema`...). A structured return annotation (`-> int`,
    `-> list[str]`, `-> Weather` for a model or dataclass) gives the tool its `output_schema`.
    The decorated name is bound to the tool, not the function: call it with `invoke`,
    `ainvoke` or `call`.
    """
    if callable(name_or_func):
        if options:
            raise TypeError("use @tool(...options...) above the function, not tool(func, ...)")
        return FunctionTool.from_function(name_or_func)
    if isinstance(name_or_func, str):
        if "name" in options:
            raise TypeError("give the tool's name once: @tool('name', ...) or @tool(name=...)")
        options["name"] = name_or_func
    elif name_or_func is not None:
        raise TypeError(f"@tool takes a function or a name, got {type(name_or_func).__name__}")

    def decorate(func: AnyFunction) -> FunctionTool:
        return FunctionTool.from_function(func, **options)

    return decorate
