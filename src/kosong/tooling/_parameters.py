"""A function tool's parameters: the schema the model reads and how arguments reach the function.

Three sources, one result (`ParametersPlan`):

- `from_signature`: the function's own parameters; each type's JSON Schema and pydantic core
  schema come from one `TypeAdapter` of the type (made once per type, shared by every tool),
  the arguments are checked by a validator of those core schemas, and the function gets them
  as keyword arguments. The pydantic model of the parameters (`FunctionTool.params`) is made
  only if it is asked for: calls never need it, and a model class costs more than the rest of
  the tool together.
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
import dataclasses
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
from pydantic_core import (
    CoreSchema,
    PydanticSerializationError,
    SchemaValidator,
    to_jsonable_python,
)

from kosong.tooling._calling import jsonschema_errors_text
from kosong.tooling._schema import (
    check_json_schema,
    check_parameter_names,
    model_parameters_schema,
    schema_validator,
    tidy_schema,
)
from kosong.tooling._signature import Param, Signature, is_named_tuple, read_signature
from kosong.utils.jsonschema import deref_json_schema

__all__ = ["ParametersPlan", "SchemaMismatch", "from_json_schema", "from_model", "from_signature"]


class SchemaMismatch(ValueError):
    """The arguments do not fit a schema given with `schema=`; the message is for the model."""


@dataclass(frozen=True, slots=True)
class ParametersPlan:
    """What a function tool needs about its parameters."""

    make_params: Callable[[], type[BaseModel]]
    """Gives the pydantic model of the arguments (a catch-all one when a JSON Schema was
    given): `FunctionTool.params`, made when first read."""
    schema: dict[str, Any]
    """The flat JSON Schema the model reads."""
    validate: Callable[[Any], Any]
    """Arguments -> validated value; raises ValidationError or SchemaMismatch."""
    bind: Callable[[Any], dict[str, Any]]
    """Validated value -> the function's keyword arguments (a fresh dict or one to copy)."""


def from_signature(
    function: Callable[..., Any],
    signature: Signature,
    owner: str,
    model_name: str,
    *,
    field_descriptions: Mapping[str, str],
    docstring_descriptions: Mapping[str, str],
) -> ParametersPlan:
    """Check arguments as `function`'s visible parameters (`signature`, read from it).

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
    properties: dict[str, Any] = {}
    validated: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    nested_defs = False
    for p in signature.visible:
        types = _type_schemas(p, owner)
        nested_defs = nested_defs or "$defs" in types.json
        description = field_descriptions.get(p.name) or p.doc or docstring_descriptions.get(p.name)
        properties[p.name] = _property(types.json, description, p)
        validated[p.name] = types.required if p.required else types.optional(p.default)
        if p.required:
            required.append(p.name)
    params = _ParamsModel(model_name, function, properties)
    if nested_defs:  # a recursive type: let pydantic place the shared definitions
        schema = model_parameters_schema(params())
    else:
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
    validator = _arguments_validator(validated)
    return ParametersPlan(params, schema, validator.validate_python, _arguments)


# The validator's schema is written in pydantic-core's schema format (`pydantic_core.
# core_schema`: a "typed-dict" of "typed-dict-field"s, "default" around an optional one's).


def _field(schema: dict[str, Any], required: bool) -> dict[str, Any]:
    return {"type": "typed-dict-field", "schema": schema, "required": required}


def _arguments_validator(fields: dict[str, dict[str, Any]]) -> SchemaValidator:
    """A validator of the arguments: a dict of the parameters, each checked by its type.

    Each field is its type's core schema: what the field of a parameters model would check,
    without a model class.
    """
    # A recursive type's core schema comes with its definitions: they go to the top, once.
    # (The field schemas are shared by every tool with such a parameter: replaced, not changed.)
    definitions: dict[str, Any] = {}
    for name, field in list(fields.items()):
        inner: dict[str, Any] = field["schema"]
        typed: dict[str, Any] = inner["schema"] if inner["type"] == "default" else inner
        if typed["type"] == "definitions":
            definitions.update((d["ref"], d) for d in typed["definitions"])
            bare = typed["schema"]
            if inner is not typed:  # the default around it stays
                bare = {**inner, "schema": bare}
            fields[name] = _field(bare, field["required"])
    schema: dict[str, Any] = {"type": "typed-dict", "fields": fields}
    if definitions:
        schema = {"type": "definitions", "schema": schema, "definitions": [*definitions.values()]}
    return SchemaValidator(cast(CoreSchema, schema))


def _arguments(validated: dict[str, Any] | BaseModel) -> dict[str, Any]:
    """The keyword arguments, under the parameters' names.

    From the validator's fresh dict, or from a `params` model (as `FunctionTool.__call__`
    gets one).
    """
    if isinstance(validated, dict):
        return validated
    fields = type(validated).model_fields
    return {fields[name].alias or name: value for name, value in validated.__dict__.items()}


class _ParamsModel:
    """Makes, once and when first asked, the pydantic model of a function's parameters.

    The signature is read again then, rather than kept by every tool (it was read without
    error once, so its errors' wording is not needed). Each field has the description the
    model reads (its property's in the schema).
    """

    __slots__ = ("_function", "_made", "_name", "_properties")

    def __init__(
        self, name: str, function: Callable[..., Any], properties: dict[str, dict[str, Any]]
    ) -> None:
        self._name, self._function, self._properties = name, function, properties
        self._made: type[BaseModel] | None = None

    def __call__(self) -> type[BaseModel]:
        if self._made is None:
            fields: dict[str, Any] = {}
            visible = read_signature(self._function, "").visible  # read without error once
            for index, p in enumerate(visible):
                field_name = p.name
                if _clashes_with_model(p.name):
                    # A parameter named `json`, `copy`, `model_x` or `_x` cannot be a pydantic
                    # field of that name: the field gets another, the parameter's as its alias.
                    field_name = f"p{index}_{p.name.lstrip('_')}"
                fields[field_name] = (
                    p.annotation,
                    Field(
                        default=p.default,
                        description=self._properties[p.name].get("description"),
                        alias=None if field_name == p.name else p.name,
                    ),
                )
            self._made = create_model(self._name, __config__=_CONFIG, **fields)
        return self._made


_CONFIG = ConfigDict(arbitrary_types_allowed=False, protected_namespaces=())
_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})
"""The defaults that cannot change, so equal ones may be one object."""


def _clashes_with_model(name: str) -> bool:
    return name.startswith(("_", "model_")) or hasattr(BaseModel, name)


def _property(type_schema: dict[str, Any], description: str | None, p: Param) -> dict[str, Any]:
    prop = _described(type_schema, description or None)
    if prop is type_schema:  # a copy: the type's is cached, shared by every tool
        prop = dict(prop)
    if not p.required:
        # A sentinel default (not JSON) is left out: the schema just says "optional".
        with contextlib.suppress(PydanticSerializationError):
            prop["default"] = to_jsonable_python(p.default)
    return prop


@dataclass(frozen=True, slots=True)
class _TypeSchemas:
    """What a parameter's type gives, both from one `TypeAdapter` (shared by every tool)."""

    json: dict[str, Any]
    """The tidy JSON Schema the model reads."""
    core: dict[str, Any]
    """The pydantic core schema that validates it."""
    required: dict[str, Any]
    """A required parameter of the type, as the arguments' validator takes it."""
    defaulted: dict[tuple[type, Any], dict[str, Any]] = dataclasses.field(
        default_factory=dict[tuple[type, Any], dict[str, Any]]
    )
    """The optional parameters of the type made so far, by their default (see `optional`)."""

    def optional(self, default: Any) -> dict[str, Any]:
        """An optional parameter of the type, with `default`, as the arguments' validator takes it.

        Shared by every parameter whose default is the same immutable scalar (`None`, `20`,
        `"fast"`...), as `required` is: the validator of each tool keeps its schema.
        """
        kind: type = type(default)  # pyright: ignore[reportUnknownVariableType] (any default)
        shared = kind in _SCALARS and default == default  # NaN is never equal
        key = (kind, default)
        made = self.defaulted.get(key) if shared else None
        if made is None:
            made = _field({"type": "default", "schema": self.core, "default": default}, False)
            if shared:
                self.defaulted[key] = made
        return made


def _type_schemas(p: Param, owner: str) -> _TypeSchemas:
    """The schemas of a parameter's type (shared with other tools: read-only)."""
    _refuse_streams(p.annotation, p, owner)
    # `Union[A, B] == Union[B, A]`, but the schema lists the members in the written order:
    # the repr keeps the order apart, the annotation itself keeps same-named classes apart.
    key: tuple[Any, str] | None = (p.annotation, repr(p.annotation))
    try:
        hash(key)
    except TypeError:  # say an Annotated with unhashable metadata: not cached
        key = None
    try:
        return _make_type_schemas(p.annotation) if key is None else _cached_type_schemas(key)
    except (PydanticUserError, PydanticSerializationError, TypeError) as e:
        raise _unsupported(p, owner, e) from e


@functools.lru_cache(maxsize=1024)
def _cached_type_schemas(key: tuple[Any, str]) -> _TypeSchemas:
    # Types repeat across tools (int, str, list[str]...); pydantic's schema generation is the
    # costly part of making a tool, so each type's schemas are made once.
    return _make_type_schemas(key[0])


def _make_type_schemas(annotation: Any) -> _TypeSchemas:
    adapter = TypeAdapter(annotation)
    raw = adapter.json_schema(mode="validation")
    core = cast(dict[str, Any], adapter.core_schema)
    json = cast(dict[str, Any], tidy_schema(deref_json_schema(raw)))
    return _TypeSchemas(json, core, _field(core, True))


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
    return ParametersPlan(functools.partial(_given, params), schema, params.model_validate, bind)


def _given(model: type[BaseModel]) -> type[BaseModel]:
    return model


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
    described = {"type": prop["type"]} if "type" in prop else {}  # one dict, grown in place
    described["description"] = description
    described.update((k, v) for k, v in prop.items() if k not in ("type", "description"))
    return described


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

    return ParametersPlan(functools.partial(_given, _AnyArguments), schema, validate, bind)


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
