"""Making a function tool: checking the function and options, deciding everything a call needs.

`make` runs once per tool; its `Runner` is all that a call reads, so nothing is inspected per
call (private; the public face is `FunctionTool` and `tool` in `kosong.tooling`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal, TypedDict, cast

from pydantic import BaseModel, ValidationError

from kosong._threads import run_sync_tool
from kosong.tooling._call_checks import pydantic_errors_text, unknown_argument_text
from kosong.tooling._function._docstring import read_docstring
from kosong.tooling._function._outcome import (
    ToolErrorHandler,
    ToolException,
    artifact_result,
    error_text,
    return_value,
    split_content_and_artifact,
    tool_exception_result,
)
from kosong.tooling._function._output_schema import derived_output_schema
from kosong.tooling._function._parameters import (
    ParametersPlan,
    SchemaMismatch,
    check_model_fits,
    from_json_schema,
    from_model,
    from_signature,
)
from kosong.tooling._function._signature import Signature, is_struct, read_signature
from kosong.tooling._metadata import (
    METADATA_FIELDS,
    EstimatedTokens,
    ToolMetadata,
    check_metadata_against_definition,
)
from kosong.tooling._return_value import ToolReturnValue
from kosong.tooling._schema import check_json_schema, check_tool_name

__all__ = [
    "AnyFunction",
    "ResponseFormat",
    "Runner",
    "ToolOptions",
    "UnknownArguments",
    "injecting_bind",
    "make",
]

ResponseFormat = Literal["content", "content_and_artifact"]
"""`"content"`: the return value is the result. `"content_and_artifact"`: the function returns
`(content, artifact)`; the content is the result, the artifact is kept on it for the application."""


class ToolOptions(TypedDict, total=False):
    """The options of `@tool` and `FunctionTool.from_function`; all are optional."""

    name: str | None
    """The tool's name; the function's `__name__` by default."""
    description: str | None
    """What the tool does, for the model; the docstring by default (see
    `keep_docstring_sections`)."""
    args_schema: type[BaseModel] | None
    """A model whose fields are the parameters, instead of the signature's."""
    schema: Mapping[str, Any] | None
    """A JSON Schema of the arguments, instead of one generated (jsonschema-rs validates)."""
    return_direct: bool
    """Tells the agent loop to hand the result to the user as is (kept on the tool)."""
    parse_docstring: bool
    """Require a usable argument section and leave every section out of the description."""
    keep_docstring_sections: bool
    """Keep the docstring's argument and return sections in the description. By default
    they are left out, with or without parameters: the argument descriptions are read into
    the schema, and what the function returns is what the model reads anyway."""
    response_format: ResponseFormat
    """Whether the function returns `(content, artifact)`."""
    handle_tool_error: ToolErrorHandler
    """What the model reads for a `ToolException`, and whether `invoke` raises it."""
    field_descriptions: Mapping[str, str]
    """Parameter (property) name -> description, before every other source."""
    sequential: bool
    """Its calls run one at a time, in call order, under a `ConcurrencyPolicy`."""
    external: bool | None
    """Its caller runs it: a call is validated, then deferred to `agent_loop`'s caller
    (`ToolMetadata.external`); the function's body is not called."""
    unknown_arguments: UnknownArguments
    """`"refuse"` (the default): a call with an argument the tool does not take is answered
    with an error naming it (the model's typo, caught); `"ignore"`: such arguments are dropped.
    A tool made with `schema=` follows that schema instead."""
    # The metadata a class-based tool can declare (see `ToolMetadata`), checked the same way.
    title: str | None
    """A human-readable name for user interfaces (MCP)."""
    read_only_hint: bool | None
    """The tool does not change its environment (MCP `readOnlyHint`)."""
    destructive_hint: bool | None
    """The tool may destroy or overwrite data (MCP `destructiveHint`)."""
    idempotent_hint: bool | None
    """Calling it again with the same arguments has no further effect (MCP `idempotentHint`)."""
    open_world_hint: bool | None
    """The tool talks to an open world, such as the web (MCP `openWorldHint`)."""
    output_schema: Mapping[str, Any] | None
    """The JSON Schema of the JSON text a call returns. By default it is read from the
    return annotation when that is structured (a model, a dataclass, a TypedDict, a list, a
    dict, a number...); None declares none."""
    provider_options: Mapping[str, Mapping[str, Any]] | None
    """Fields merged into one provider's entry for the tool, keyed by its name (see
    `ToolMetadata.provider_options`)."""
    version: str | None
    """The tool's semantic version, `MAJOR.MINOR.PATCH`."""
    changelog: Mapping[str, str] | None
    """What each version changed, by semantic version."""
    strict: bool | None
    """Reject arguments with properties the schema does not declare."""
    cacheable: bool | None
    """Whether results may be cached (identical arguments give an identical result)."""
    cache_ttl: float | None
    """How long, in seconds, a cached result stays valid (needs `cacheable=True`)."""
    cache_key_params: list[str] | None
    """The arguments the cache key is made of (default: all of them)."""
    streaming: bool | None
    """Whether the tool reports progress while it runs."""
    estimated_tokens: int | EstimatedTokens | Mapping[str, Any] | None
    """Tokens the result takes: a number, or `{input, output: {min, max, typical}}`."""
    deprecated: bool | None
    """Whether the tool is deprecated."""
    sunset_date: str | None
    """When the tool stops working, as an ISO 8601 date or date-time."""
    replacement: str | None
    """The name of the tool to use instead."""
    migration_guide: str | None
    """Where to read how to move to the replacement (usually a URL)."""


UnknownArguments = Literal["refuse", "ignore"]
"""What a function tool does with an argument it does not take (`unknown_arguments`)."""

AnyFunction = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Runner:
    """Everything a call needs, decided when the tool was made (no inspection per call)."""

    name: str
    validate: Callable[[Any], Any]
    """Arguments -> validated value (the plan's); raises ValidationError or SchemaMismatch."""
    accepted: Mapping[str, Any] | None
    """The arguments the tool takes (its schema's properties: the same dict), or None when
    one it does not take is left to `validate` (ignored, or refused by a given `schema`)."""
    bind: Callable[[Any], dict[str, Any]]
    params: Callable[[], type[BaseModel]]
    """Gives the pydantic model of the arguments (made when first asked for)."""
    func: AnyFunction | None
    coroutine: Callable[..., Awaitable[Any]] | None
    handler: ToolErrorHandler
    artifact: bool
    """Whether the function returns `(content, artifact)` (`response_format`)."""
    injected: frozenset[str]
    """The injected parameters (`Injected[...]`), which only `inject` can give values."""
    required_injected: tuple[str, ...]
    bound: Mapping[str, Any]
    """The injected values given so far."""
    base_bind: Callable[[Any], dict[str, Any]]
    structured: bool = False
    """Whether the tool declares an output schema: its data also travels as a JSON value."""

    def checked(self, arguments: Any) -> Any:
        """`arguments` validated; raises ValidationError or SchemaMismatch.

        An argument the tool does not take is refused with what else is wrong, in one
        message: one retry of the model fixes it all.
        """
        accepted = self.accepted
        if accepted is None or not isinstance(arguments, dict):
            return self.validate(arguments)
        given = cast(dict[str, Any], arguments)
        if given.keys() <= accepted.keys():
            return self.validate(given)
        parameters = list(accepted)
        texts = [
            unknown_argument_text(name, value, parameters)
            for name, value in given.items()
            if name not in accepted
        ]
        try:
            self.validate({k: v for k, v in given.items() if k in accepted})
        except ValidationError as e:
            texts.append(pydantic_errors_text(e, parameters))
        except SchemaMismatch as e:
            texts.append(str(e))
        raise SchemaMismatch("; ".join(texts))

    def _value(self, kwargs: dict[str, Any]) -> Awaitable[Any]:
        # The async function's own coroutine, awaited by the caller: a call in flight keeps
        # no frame of ours between the two (each costs the garbage collector, per call).
        if self.coroutine is not None:
            return self.coroutine(**kwargs)
        return self._in_thread(kwargs)

    async def _in_thread(self, kwargs: dict[str, Any]) -> Any:
        value = await run_sync_tool(functools.partial(cast(AnyFunction, self.func), **kwargs))
        # A sync function may hand back an awaitable (a `functools.wraps` wrapper of an async
        # function, a lambda returning a coroutine): its value is what the function means.
        while inspect.isawaitable(value):
            value = await value
        return value

    async def execute(self, kwargs: dict[str, Any]) -> ToolReturnValue:
        """Run the function; its result or ToolException as a ToolReturnValue."""
        try:
            value = await self._value(kwargs)
        except ToolException as e:
            return tool_exception_result(e, self.handler)
        if self.artifact:
            return artifact_result(self.name, value, self.structured)
        return return_value(value, self.structured)

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


def injecting_bind(run: Runner, values: Mapping[str, Any]) -> Callable[[Any], dict[str, Any]]:
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


_NOTHING_BOUND: Mapping[str, Any] = MappingProxyType({})
_NO_NAMES: frozenset[str] = frozenset()  # shared: an empty frozenset costs 216 bytes a tool
_OPTIONS = frozenset(ToolOptions.__annotations__)
_METADATA_OPTIONS = tuple(f for f in METADATA_FIELDS if f != "sequential")


def make(
    func: AnyFunction | None,
    coroutine: Callable[..., Awaitable[Any]] | None,
    options: ToolOptions,
) -> tuple[dict[str, Any], dict[str, Any], Runner]:
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
    description = options.get("description") or (
        parsed.prose
        if strict
        else parsed.without_arguments
        if parsed.has_sections and not options.get("keep_docstring_sections", False)
        else doc
    )
    if not description or not description.strip():
        raise ValueError(f"{owner} has no description: write a docstring or pass description=...")

    field_descriptions = dict(options.get("field_descriptions") or {})
    plan = _plan(
        cast(AnyFunction, source), signature, owner, name, model, struct is not None, schema,
        field_descriptions, parsed.arguments,
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
    unknown_arguments = options.get("unknown_arguments", "refuse")
    if unknown_arguments not in ("refuse", "ignore"):
        raise ValueError(
            f"unknown_arguments must be 'refuse' or 'ignore', got {unknown_arguments!r}"
        )
    refuses = unknown_arguments == "refuse" and schema is None
    positional = tuple(p.name for p in signature.params if p.positional_only)
    runner = Runner(
        name=name,
        validate=plan.validate,
        accepted=plan.schema.get("properties", {}) if refuses else None,
        bind=plan.bind,
        params=plan.make_params,
        func=_positional(func, positional),
        coroutine=_positional_async(coroutine, positional),
        handler=handler,
        artifact=response_format == "content_and_artifact",
        injected=frozenset(p.name for p in signature.params if p.injected) or _NO_NAMES,
        required_injected=tuple(p.name for p in signature.params if p.injected and p.required),
        bound=_NOTHING_BOUND,
        base_bind=plan.bind,
    )
    if runner.required_injected:  # refused until `inject` gives them
        runner = replace(runner, bind=injecting_bind(runner, {}))
    fields: dict[str, Any] = {"name": name, "description": description}
    # Given only when not the default: the fewer fields a tool sets, the less it weighs.
    if options.get("return_direct", False):
        fields["return_direct"] = True
    if response_format != "content":
        fields["response_format"] = response_format
    sequential = options.get("sequential", False)
    given = cast(Mapping[str, Any], options)
    declared: dict[str, Any] = {k: given[k] for k in _METADATA_OPTIONS if k in given}
    if sequential:
        declared["sequential"] = True
    if "output_schema" not in options and response_format == "content":
        derived = derived_output_schema(source)
        if derived is not None:  # pydantic's own schema: valid, not checked again
            fields["output_schema"] = derived
    if fields.get("output_schema", declared.get("output_schema")) is not None:
        runner = replace(runner, structured=True)
    parameters = plan.schema
    if declared:
        # Checked as a class-based tool's are (pydantic's ValidationError is a ValueError).
        metadata = ToolMetadata.model_validate({k: _plain(v) for k, v in declared.items()})
        parameters = check_metadata_against_definition(metadata, name, parameters)
        fields.update(metadata.metadata())
    return fields, parameters, runner


def _plan(
    function: AnyFunction,
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
            function,
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


def _plain(value: Any) -> Any:
    """A mapping option (`output_schema`, `changelog`...) as the dict the metadata holds."""
    return dict(cast(Mapping[str, Any], value)) if isinstance(value, Mapping) else value
