"""A function tool's parameters: the schema the model reads and how arguments reach the function.

Three sources, one result (`ParametersPlan`):

- `from_signature`: the function's own parameters become the fields of a pydantic model made
  for the tool; the function gets them as keyword arguments.
- `from_model`: a model given as `args_schema`, or the type of a function's only parameter
  (the "argument struct": a pydantic model, dataclass or TypedDict, which the function then
  receives as an instance).
- `from_json_schema`: a JSON Schema given as `schema=`; arguments are checked against it with
  jsonschema-rs and passed as keyword arguments.

Everything is decided here, once; what runs per call is `validate` and `bind`.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import functools
import io
import operator
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, RootModel, TypeAdapter, create_model
from pydantic.errors import (
    PydanticInvalidForJsonSchema,
    PydanticSchemaGenerationError,
    PydanticUserError,
)
from pydantic_core import PydanticSerializationError, to_jsonable_python

from kosong.tooling._calling import jsonschema_errors_text
from kosong.tooling._schema import (
    check_json_schema,
    check_parameter_names,
    model_parameters_schema,
    schema_validator,
    tidy_schema,
)
from kosong.tooling._signature import Param, Signature, is_named_tuple
from kosong.utils.jsonschema import deref_json_schema

__all__ = ["ParametersPlan", "SchemaMismatch", "from_json_schema", "from_model", "from_signature"]


class SchemaMismatch(ValueError):
    """The arguments do not fit a schema given with `schema=`; the message is for the model."""


@dataclass(frozen=True, slots=True)
class ParametersPlan:
    """What a function tool needs about its parameters."""

    params: type[BaseModel]
    """The pydantic model of the arguments (a catch-all one when a JSON Schema was given)."""
    schema: dict[str, Any]
    """The flat JSON Schema the model reads."""
    validate: Callable[[Any], Any]
    """Arguments -> validated value; raises ValidationError or SchemaMismatch."""
    bind: Callable[[Any], dict[str, Any]]
    """Validated value -> the function's keyword arguments (a fresh dict or one to copy)."""


def from_signature(
    signature: Signature,
    owner: str,
    model_name: str,
    *,
    field_descriptions: Mapping[str, str],
    docstring_descriptions: Mapping[str, str],
) -> ParametersPlan:
    """Make a model of the visible parameters.

    A parameter's description is, first found: `field_descriptions`, its annotation's,
    `docstring_descriptions`.
    """
    if signature.var_keyword:
        raise TypeError(
            f"{owner} takes **kwargs, which a schema read from its signature cannot describe; "
            "name each argument, or pass `schema=` or `args_schema=`"
        )
    names = [p.name for p in signature.visible]
    check_parameter_names(field_descriptions, names, f"field_descriptions of {owner} names")
    fields: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    renamed: list[tuple[str, str]] = []
    nested_defs = False
    for index, p in enumerate(signature.visible):
        type_schema = _type_schema(p, owner)
        nested_defs = nested_defs or "$defs" in type_schema
        description = field_descriptions.get(p.name) or p.doc or docstring_descriptions.get(p.name)
        field_name = p.name
        if _clashes_with_model(p.name):
            # A parameter named `json`, `copy`, `model_x` or `_x` cannot be a pydantic field of
            # that name; the field gets another and keeps the parameter's name as its alias.
            field_name = f"p{index}_{p.name.lstrip('_')}"
            renamed.append((field_name, p.name))
        if description is None and field_name == p.name:
            # The plain form: a FieldInfo per field costs pydantic as much again to build.
            fields[field_name] = (p.annotation, ... if p.required else p.default)
        else:
            alias = None if field_name == p.name else p.name
            fields[field_name] = (
                p.annotation,
                Field(default=p.default, description=description, alias=alias),
            )
        properties[p.name] = _property(type_schema, description, p)
        if p.required:
            required.append(p.name)
    params = create_model(model_name, __config__=_CONFIG, **fields)
    if nested_defs:  # a recursive type: let pydantic place the shared definitions
        schema = model_parameters_schema(params)
    else:
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
    return ParametersPlan(params, schema, params.model_validate, _field_binder(renamed))


_CONFIG = ConfigDict(arbitrary_types_allowed=False, protected_namespaces=())


def _field_binder(renamed: list[tuple[str, str]]) -> Callable[[Any], dict[str, Any]]:
    if not renamed:
        # The fields are exactly the parameters, in __dict__: the call site copies it with **.
        return operator.attrgetter("__dict__")

    def bind(params: Any) -> dict[str, Any]:
        kwargs = dict(params.__dict__)
        for field_name, param_name in renamed:
            kwargs[param_name] = kwargs.pop(field_name)
        return kwargs

    return bind


def _clashes_with_model(name: str) -> bool:
    return name.startswith(("_", "model_")) or hasattr(BaseModel, name)


def _property(type_schema: dict[str, Any], description: str | None, p: Param) -> dict[str, Any]:
    prop = dict(_described(type_schema, description or None))  # a copy: the type's is cached
    if not p.required:
        # A sentinel default (not JSON) is left out: the schema just says "optional".
        with contextlib.suppress(PydanticSerializationError):
            prop["default"] = to_jsonable_python(p.default)
    return prop


def _type_schema(p: Param, owner: str) -> dict[str, Any]:
    """The tidy schema of a parameter's type (shared with other tools: read-only)."""
    _refuse_streams(p.annotation, p, owner)
    # `Union[A, B] == Union[B, A]`, but the schema lists the members in the written order:
    # the repr keeps the order apart, the annotation itself keeps same-named classes apart.
    key: tuple[Any, str] | None = (p.annotation, repr(p.annotation))
    try:
        hash(key)
    except TypeError:  # say an Annotated with unhashable metadata: not cached
        key = None
    try:
        return _make_type_schema(p.annotation) if key is None else _cached_type_schema(key)
    except (PydanticUserError, PydanticSerializationError, TypeError) as e:
        raise _unsupported(p, owner, e) from e


@functools.lru_cache(maxsize=1024)
def _cached_type_schema(key: tuple[Any, str]) -> dict[str, Any]:
    # Types repeat across tools (int, str, list[str]...); pydantic's JSON Schema generation is
    # the costly part of making a tool, so each type's schema is made once.
    return _make_type_schema(key[0])


def _make_type_schema(annotation: Any) -> dict[str, Any]:
    raw = TypeAdapter(annotation).json_schema(mode="validation")
    return cast(dict[str, Any], tidy_schema(deref_json_schema(raw)))


def _unsupported(p: Param, owner: str, error: Exception) -> TypeError:
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    cause = f"{type(error).__name__}: {first_line}"
    if isinstance(error, PydanticUserError) and not isinstance(
        error, PydanticSchemaGenerationError | PydanticInvalidForJsonSchema
    ):  # pydantic refuses how the type is written (say typing.TypedDict before 3.12)
        return TypeError(
            f"parameter `{p.name}` of {owner} has type {_type_name(p.annotation)}, which "
            f"pydantic cannot use ({cause})"
        )
    return TypeError(
        f"parameter `{p.name}` of {owner} has type {_type_name(p.annotation)}, which JSON Schema "
        f"cannot describe ({cause}); use JSON-like types (str, int, float, bool, lists, dicts, "
        "pydantic models...), or mark a value the application supplies as Injected[...]"
    )


def _type_name(annotation: Any) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)


# Types pydantic would accept but that make no sense as arguments a model writes.
_STREAMS = cast(
    tuple[type, ...],
    (
        cabc.Iterator,
        cabc.AsyncIterator,
        cabc.AsyncIterable,
        cabc.Awaitable,
        cabc.Callable,
        io.IOBase,
        typing.IO,
    ),
)


def _refuse_streams(annotation: Any, p: Param, owner: str) -> None:
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and issubclass(origin, _STREAMS):
        raise TypeError(
            f"parameter `{p.name}` of {owner} has type {_type_name(annotation)}: a callable, "
            "a stream or a file handle cannot come from a model's JSON arguments; take the "
            "data itself (say a `str` path or the text), or mark it as Injected[...]"
        )
    for arg in typing.get_args(annotation):
        if isinstance(arg, type) or typing.get_origin(arg) is not None:
            _refuse_streams(arg, p, owner)


def from_model(
    model: type[Any],
    owner: str,
    *,
    instance_name: str | None,
    field_descriptions: Mapping[str, str],
    docstring_descriptions: Mapping[str, str],
) -> ParametersPlan:
    """Use a model's fields as the parameters.

    With `instance_name`, the function takes the validated instance as that argument (a
    dataclass or TypedDict is validated through a `RootModel`); otherwise it takes the model's
    fields as keyword arguments.
    """
    if is_named_tuple(model):
        # Validated as an object of its fields (pydantic would expect an array), then made
        # into the tuple the function takes.
        params: type[BaseModel] = _named_tuple_model(model)
    elif issubclass(model, BaseModel):
        params = model
    else:  # a dataclass, a TypedDict
        params = RootModel[model]
    try:
        schema = model_parameters_schema(params)
    except (PydanticUserError, ValueError) as e:
        raise TypeError(f"the argument model of {owner} cannot be described: {e}") from e
    schema = _with_descriptions(schema, field_descriptions, docstring_descriptions, owner)
    bind: Callable[[Any], dict[str, Any]]
    if instance_name is None:
        bind = operator.attrgetter("__dict__")
    elif is_named_tuple(model):
        bind = functools.partial(_tuple_as_argument, instance_name, model)
    elif params is model:
        bind = functools.partial(_as_argument, instance_name)
    else:
        bind = functools.partial(_root_as_argument, instance_name)
    return ParametersPlan(params, schema, params.model_validate, bind)


def _as_argument(name: str, value: Any) -> dict[str, Any]:
    return {name: value}


def _root_as_argument(name: str, value: Any) -> dict[str, Any]:
    return {name: value.root}


def _tuple_as_argument(name: str, cls: type[Any], value: Any) -> dict[str, Any]:
    return {name: cls(**value.__dict__)}


def _named_tuple_model(cls: type[Any]) -> type[BaseModel]:
    hints = typing.get_type_hints(cls)
    defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
    fields: dict[str, Any] = {
        name: (hints.get(name, Any), defaults.get(name, ...)) for name in cls._fields
    }
    return create_model(cls.__name__, __config__=_CONFIG, **fields)


def _with_descriptions(
    schema: dict[str, Any],
    overrides: Mapping[str, str],
    fallbacks: Mapping[str, str],
    owner: str,
) -> dict[str, Any]:
    """`schema` with property descriptions: `overrides` replace, `fallbacks` fill gaps."""
    properties = cast(dict[str, Any], schema.get("properties", {}))
    check_parameter_names(overrides, list(properties), f"field_descriptions of {owner} names")
    descriptions = {
        name: text
        for name, text in fallbacks.items()
        if name in properties and not properties[name].get("description")
    }
    descriptions.update(overrides)
    if not descriptions:
        return schema
    new_properties = {
        name: _described(prop, descriptions.get(name)) for name, prop in properties.items()
    }
    return {**schema, "properties": new_properties}  # the cached schema stays untouched


def _described(prop: dict[str, Any], description: str | None) -> dict[str, Any]:
    if description is None:
        return prop
    rest = {k: v for k, v in prop.items() if k not in ("type", "description")}
    front = {"type": prop["type"]} if "type" in prop else {}
    return {**front, "description": description, **rest}


class _AnyArguments(BaseModel, extra="allow"):
    """The `params` of a tool whose schema was given: arguments live in the extras."""


def from_json_schema(
    schema: Mapping[str, Any],
    signature: Signature,
    owner: str,
    field_descriptions: Mapping[str, str],
    docstring_descriptions: Mapping[str, str],
) -> ParametersPlan:
    """Check `schema` and `signature` against each other; validate with jsonschema-rs."""
    schema = dict(schema)
    check_json_schema(schema, f"the `schema` of {owner}")
    if schema.get("type") != "object":
        raise ValueError(
            f'the `schema` of {owner} must describe an object (`"type": "object"`): '
            "its properties are passed to the function as keyword arguments"
        )
    schema = _with_descriptions(schema, field_descriptions, docstring_descriptions, owner)
    properties = cast(Mapping[str, Any], schema.get("properties", {}))
    missing = [p.name for p in signature.visible if p.required and p.name not in properties]
    if missing:
        raise TypeError(
            f"{owner} requires {', '.join(map(repr, missing))}, which the `schema` does not "
            "define; add it to the schema's properties or give it a default"
        )
    accepted = frozenset(p.name for p in signature.visible)
    validator = schema_validator(schema)
    takes_any = signature.var_keyword

    def validate(arguments: Any) -> Any:
        if not validator.is_valid(arguments):
            raise SchemaMismatch(jsonschema_errors_text(validator, arguments))
        if not takes_any and not accepted.issuperset(arguments):
            extra = sorted(set(arguments) - accepted)
            raise SchemaMismatch(
                f"unexpected argument(s) {', '.join(map(repr, extra))}; "
                f"the tool takes {', '.join(sorted(accepted)) or 'no arguments'}"
            )
        return arguments

    def bind(arguments: Any) -> dict[str, Any]:
        # `call` passes the checked dict; `__call__` passes an `_AnyArguments` model.
        if isinstance(arguments, _AnyArguments):
            return arguments.__pydantic_extra__ or {}
        return cast(dict[str, Any], arguments)

    return ParametersPlan(_AnyArguments, schema, validate, bind)


def check_model_fits(model: type[BaseModel], signature: Signature, owner: str) -> None:
    """Raise TypeError unless the model's fields and the function's parameters match."""
    fields = set(model.model_fields)
    params = {p.name for p in signature.visible}
    missing = [p.name for p in signature.visible if p.required and p.name not in fields]
    if missing:
        raise TypeError(
            f"{owner} requires {', '.join(map(repr, missing))}, which `args_schema` "
            f"{model.__qualname__} does not have"
        )
    extra = sorted(fields - params)
    if extra and not signature.var_keyword:
        raise TypeError(
            f"`args_schema` {model.__qualname__} has field(s) {', '.join(map(repr, extra))}, "
            f"which {owner} does not take"
        )
