"""Tools from plain functions: `@tool` and `FunctionTool.from_function`.

```python
from kosong.tooling import tool

@tool
def multiply(a: int, b: int) -> int:
    \"\"\"Multiply two numbers.\"\"\"
    return a * b
```

`multiply` is a `FunctionTool`: a `CallableTool2` whose parameters model and flat JSON Schema
are read from the signature, once, when the tool is made. Every toolset runs it like any other
tool; `invoke` and `ainvoke` call it directly with a dict of arguments. See
docs/function-tools.md for the rules (types, descriptions, return values, errors).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict, cast, overload

from pydantic import BaseModel, PrivateAttr, ValidationError
from typing_extensions import Unpack

from kosong.tooling._callable2 import CallableTool2
from kosong.tooling._calling import pydantic_errors_text
from kosong.tooling._docstring import read_docstring
from kosong.tooling._function_result import (
    ToolErrorHandler,
    ToolException,
    artifact_result,
    error_text,
    return_value,
    split_content_and_artifact,
    tool_exception_result,
)
from kosong.tooling._parameters import (
    ParametersPlan,
    SchemaMismatch,
    check_model_fits,
    from_json_schema,
    from_model,
    from_signature,
)
from kosong.tooling._return import ToolReturnValue
from kosong.tooling._schema import check_json_schema, check_tool_name
from kosong.tooling._signature import Injected, Signature, is_struct, read_signature
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

ResponseFormat = Literal["content", "content_and_artifact"]
"""`"content"`: the return value is the result. `"content_and_artifact"`: the function returns
`(content, artifact)`; the content is the result, the artifact is kept on it for the application."""


class ToolOptions(TypedDict, total=False):
    """The options of `@tool` and `FunctionTool.from_function`; all are optional."""

    name: str | None
    """The tool's name; the function's `__name__` by default."""
    description: str | None
    """What the tool does, for the model; the docstring by default."""
    args_schema: type[BaseModel] | None
    """A model whose fields are the parameters, instead of the signature's."""
    schema: Mapping[str, Any] | None
    """A JSON Schema of the arguments, instead of one generated (jsonschema-rs validates)."""
    return_direct: bool
    """Tells the agent loop to hand the result to the user as is (kept on the tool)."""
    parse_docstring: bool
    """Require a usable argument section and leave it out of the description."""
    response_format: ResponseFormat
    """Whether the function returns `(content, artifact)`."""
    handle_tool_error: ToolErrorHandler
    """What the model reads for a `ToolException`, and whether `invoke` raises it."""
    field_descriptions: Mapping[str, str]
    """Parameter (property) name -> description, before every other source."""


AnyFunction = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class _Runner:
    """Everything a call needs, decided when the tool was made (no inspection per call)."""

    name: str
    validate: Callable[[Any], Any]
    bind: Callable[[Any], dict[str, Any]]
    func: AnyFunction | None
    coroutine: Callable[..., Awaitable[Any]] | None
    handler: ToolErrorHandler
    artifact: bool
    injected: frozenset[str]
    """The injected parameters (`Injected[...]`), which only `inject` can give values."""
    required_injected: tuple[str, ...]
    bound: Mapping[str, Any]
    """The injected values given so far."""
    base_bind: Callable[[Any], dict[str, Any]]

    convert: Callable[[object], ToolReturnValue]
    """What the function returned -> the result (`return_value`, or `artifact_result`)."""

    async def _value(self, kwargs: dict[str, Any]) -> Any:
        if self.coroutine is not None:
            return await self.coroutine(**kwargs)
        return await asyncio.to_thread(functools.partial(self.func, **kwargs))  # pyright: ignore[reportArgumentType]

    async def execute(self, kwargs: dict[str, Any]) -> ToolReturnValue:
        """Run the function; its result or ToolException as a ToolReturnValue."""
        try:
            value = await self._value(kwargs)
        except ToolException as e:
            return tool_exception_result(e, self.handler)
        return self.convert(value)

    async def raw(self, kwargs: dict[str, Any]) -> Any:
        """Run the function; what it returned, for `ainvoke`."""
        try:
            value = await self._value(kwargs)
        except ToolException as e:
            return self.handled(e)
        return self.content(value)

    def content(self, value: object) -> Any:
        if self.artifact:
            return split_content_and_artifact(self.name, value)[0]
        return value

    def handled(self, error: ToolException) -> str:
        if self.handler is False:
            raise error
        return error_text(error, self.handler)


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

    _runner: _Runner = PrivateAttr()

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
        fields, parameters, runner = _make(func, coroutine, options)
        tool = cls.model_construct(**fields)
        tool._base = Tool.model_construct(
            name=tool.name, description=tool.description, parameters=parameters
        )
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
        copy._runner = replace(run, bound=bound, bind=_injecting_bind(run, bound))
        return copy

    async def call(self, arguments: JsonType) -> ToolReturnValue:
        """Validate `arguments`, run the function, and return its result as a ToolReturnValue."""
        # The hot path: pydantic's __getattr__ for a private attribute costs about a
        # microsecond, so read the runner straight from where pydantic keeps it.
        run = cast(_Runner, self.__pydantic_private__["_runner"])  # pyright: ignore[reportOptionalSubscript]
        try:
            kwargs = run.bind(run.validate(arguments))
        except ValidationError as e:
            return ToolValidateError(pydantic_errors_text(e))
        except SchemaMismatch as e:
            return ToolValidateError(str(e))
        try:  # run.execute(kwargs), inlined: one coroutine less per call
            if run.coroutine is not None:
                value = await run.coroutine(**kwargs)
            else:
                value = await asyncio.to_thread(functools.partial(run.func, **kwargs))  # pyright: ignore[reportArgumentType]
        except ToolException as e:
            return tool_exception_result(e, run.handler)
        return run.convert(value)

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
        kwargs = run.bind(run.validate(dict(args)))
        if run.func is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(run.raw(kwargs))
            raise NotImplementedError(
                f"tool `{self.name}` only has an async function and an event loop is running "
                f"in this thread; use `await {self.name}.ainvoke(...)`"
            )
        try:
            return run.content(run.func(**kwargs))
        except ToolException as e:
            return run.handled(e)

    async def ainvoke(self, args: Mapping[str, Any]) -> Any:
        """Call the tool with `args` and return what the function returned (see `invoke`).

        The async function is awaited; a sync-only tool runs in a worker thread.
        """
        run = self._runner
        return await run.raw(run.bind(run.validate(dict(args))))


def _injecting_bind(run: _Runner, values: Mapping[str, Any]) -> Callable[[Any], dict[str, Any]]:
    base_bind = run.base_bind
    missing = [name for name in run.required_injected if name not in values]
    if missing:
        text = (
            f"tool `{run.name}` needs the injected value(s) {', '.join(map(repr, missing))}; "
            f"make the tool with them: tool.inject({missing[0]}=...)"
        )

        def refuse(validated: Any) -> dict[str, Any]:
            raise TypeError(text)

        return refuse
    if not values:
        return base_bind
    bound = dict(values)

    def bind(validated: Any) -> dict[str, Any]:
        kwargs = dict(base_bind(validated))
        kwargs.update(bound)
        return kwargs

    return bind


_OPTIONS = frozenset(ToolOptions.__annotations__)


def _make(
    func: AnyFunction | None,
    coroutine: Callable[..., Awaitable[Any]] | None,
    options: ToolOptions,
) -> tuple[dict[str, Any], dict[str, Any], _Runner]:
    """Check the functions and options; return the tool's fields, schema and runner."""
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TypeError(f"unknown tool option(s) {', '.join(unknown)}; known: {sorted(_OPTIONS)}")
    if func is not None and _is_async(func):
        if coroutine is not None:
            raise TypeError("`func` is async: pass it as `coroutine`, and a sync one as `func`")
        func, coroutine = None, func
    if coroutine is not None and not _is_async(coroutine):
        raise TypeError("`coroutine` must be an async function (`async def`)")
    source: AnyFunction | None = func if func is not None else coroutine
    if source is None:
        raise TypeError("a function tool needs a function: `func`, `coroutine` or both")
    target: AnyFunction = (
        cast(AnyFunction, source.func) if isinstance(source, functools.partial) else source
    )
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        raise TypeError(
            f"{_qualname(target)} is a generator function; a tool returns one result, so "
            "collect the items and return them (say as a list)"
        )
    name = options.get("name") or getattr(target, "__name__", "")
    if not name or name == "<lambda>":
        raise ValueError(f"{_qualname(target)} has no usable name; pass name=...")
    check_tool_name(name)
    owner = f"tool `{name}` ({_qualname(target)})"
    signature = read_signature(cast(AnyFunction, source), owner)
    args_schema = options.get("args_schema")
    schema = options.get("schema")
    if args_schema is not None and schema is not None:
        raise ValueError(f"{owner}: give `args_schema` or `schema`, not both")

    visible = signature.visible
    struct = (
        visible[0]
        if args_schema is None and schema is None and len(visible) == 1
        and is_struct(visible[0].annotation)
        else None
    )  # fmt: skip
    model: type[Any] | None = args_schema or (struct.annotation if struct else None)
    known = [p.name for p in signature.params]
    if model is not None:
        known += list(_model_properties(model))
    elif schema is not None:
        known += list(schema.get("properties", {}))

    strict = options.get("parse_docstring", False)
    doc = inspect.getdoc(target) or ""
    if not doc and not inspect.isroutine(target):  # an object with `__call__`
        doc = inspect.getdoc(type(target).__call__) or ""
    if strict and not doc and visible:
        raise ValueError(f"parse_docstring=True, but {owner} has no docstring")
    parsed = read_docstring(doc, known, needs_arguments=bool(visible), strict=strict, owner=owner)
    description = options.get("description") or (parsed.prose if strict else doc)
    if not description or not description.strip():
        raise ValueError(f"{owner} has no description: write a docstring or pass description=...")

    field_descriptions = dict(options.get("field_descriptions") or {})
    plan = _plan(
        signature, owner, name, model, struct is not None, schema, field_descriptions,
        parsed.arguments,
    )  # fmt: skip
    check_json_schema(plan.schema, f"the parameters schema of {owner}")

    handler = options.get("handle_tool_error", False)
    if not isinstance(handler, bool | str) and not callable(handler):
        raise TypeError(f"handle_tool_error must be a bool, a str or a callable, got {handler!r}")
    response_format = options.get("response_format", "content")
    if response_format not in ("content", "content_and_artifact"):
        raise ValueError(
            f"response_format must be 'content' or 'content_and_artifact', got {response_format!r}"
        )
    positional = tuple(p.name for p in signature.params if p.positional_only)
    runner = _Runner(
        name=name,
        validate=plan.validate,
        bind=plan.bind,
        func=_positional(func, positional),
        coroutine=_positional_async(coroutine, positional),
        handler=handler,
        artifact=response_format == "content_and_artifact",
        convert=(
            functools.partial(artifact_result, name)
            if response_format == "content_and_artifact"
            else return_value
        ),
        injected=frozenset(p.name for p in signature.params if p.injected),
        required_injected=tuple(p.name for p in signature.params if p.injected and p.required),
        bound={},
        base_bind=plan.bind,
    )
    runner = replace(runner, bind=_injecting_bind(runner, {}))
    fields: dict[str, Any] = {
        "name": name,
        "description": description,
        "params": plan.params,
        "return_direct": bool(options.get("return_direct", False)),
        "response_format": response_format,
    }
    return fields, plan.schema, runner


def _plan(
    signature: Signature,
    owner: str,
    name: str,
    model: type[Any] | None,
    is_struct_function: bool,
    schema: Mapping[str, Any] | None,
    field_descriptions: dict[str, str],
    docstring_descriptions: dict[str, str],
) -> ParametersPlan:
    if schema is not None:
        return from_json_schema(
            schema, signature, owner, field_descriptions, docstring_descriptions
        )
    if model is None:
        return from_signature(
            signature,
            owner,
            name,
            field_descriptions=field_descriptions,
            docstring_descriptions=docstring_descriptions,
        )
    visible = signature.visible
    instance_name: str | None = None
    if is_struct_function or (len(visible) == 1 and visible[0].annotation is model):
        instance_name = visible[0].name
    else:
        check_model_fits(model, signature, owner)
    return from_model(
        model,
        owner,
        instance_name=instance_name,
        field_descriptions=field_descriptions,
        docstring_descriptions=docstring_descriptions,
    )


def _model_properties(model: type[Any]) -> Mapping[str, Any]:
    return from_model(
        model, "the argument model", instance_name="_", field_descriptions={},
        docstring_descriptions={},
    ).schema.get("properties", {})  # fmt: skip


def _is_async(func: object) -> bool:
    # An object with `async def __call__` is async too.
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _qualname(func: object) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


def _positional(func: AnyFunction | None, names: tuple[str, ...]) -> AnyFunction | None:
    """`func`, or a wrapper that passes its positional-only parameters by position."""
    if func is None or not names:
        return func
    target = func

    def call_positionally(**kwargs: Any) -> Any:
        return target(*[kwargs.pop(n) for n in names if n in kwargs], **kwargs)

    return call_positionally


def _positional_async(
    func: Callable[..., Awaitable[Any]] | None, names: tuple[str, ...]
) -> Callable[..., Awaitable[Any]] | None:
    if func is None or not names:
        return func
    target = func

    async def call_positionally(**kwargs: Any) -> Any:
        return await target(*[kwargs.pop(n) for n in names if n in kwargs], **kwargs)

    return call_positionally


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
    (`@tool(parse_docstring=True, return_direct=True)`; see `ToolOptions`). The decorated name
    is bound to the tool, not the function: call it with `invoke`, `ainvoke` or `call`.
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
