"""Reading a function's signature: its parameters, their types, and what the model must not see.

`read_signature` runs once, when a tool is created, and refuses at once what a tool cannot
take: `*args`, `**kwargs` (unless the schema is given rather than read from the signature),
a `FieldInfo` as a default, and unresolvable annotations. Types that JSON Schema cannot describe
are refused later, in `kosong.tooling._function._parameters`, where each type's schema is made.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from typing_extensions import is_typeddict

__all__ = [
    "INJECTED",
    "Injected",
    "Param",
    "Signature",
    "is_named_tuple",
    "is_struct",
    "read_signature",
]


class _InjectedMarker:
    """The `Annotated` metadata that marks a parameter as injected (see `Injected`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Injected"


INJECTED = _InjectedMarker()

_T = TypeVar("_T")

Injected = Annotated[_T, INJECTED]
"""`ctx: Injected[AppContext]`: a parameter the application supplies and the model never sees.

It is left out of the tool's schema; its value comes from `FunctionTool.inject(ctx=...)`, or
from its default. A type checker reads `Injected[AppContext]` as plain `AppContext`.
"""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a tool function, as the tool needs it."""

    name: str
    annotation: Any
    """The type, with the metadata kosong reads (description strings, `Injected`) removed."""
    default: Any
    """The default, or `PydanticUndefined` when the parameter is required."""
    doc: str | None
    """A description given in the annotation (`Annotated[T, "text"]` or a `Field`'s)."""
    injected: bool
    positional_only: bool

    @property
    def required(self) -> bool:
        """Whether the parameter has no default."""
        return self.default is PydanticUndefined


@dataclass(frozen=True, slots=True)
class Signature:
    """The parameters of a tool function, in order."""

    params: tuple[Param, ...]
    var_keyword: bool
    """Whether the function takes `**kwargs`."""

    @property
    def visible(self) -> tuple[Param, ...]:
        """The parameters the model sends (all but the injected ones)."""
        return tuple(p for p in self.params if not p.injected)


def read_signature(func: Callable[..., Any], owner: str) -> Signature:
    """Read `func`'s parameters; raise TypeError for what a tool cannot take."""
    try:
        signature = inspect.signature(func, eval_str=True)
    except (NameError, SyntaxError):
        # Only the parameters matter: a return annotation naming a local class (with
        # `from __future__ import annotations`) must not stop the tool from being made.
        signature = inspect.signature(func)
        signature = signature.replace(
            parameters=[
                p.replace(annotation=_resolve(p.annotation, p.name, func, owner))
                for p in signature.parameters.values()
            ]
        )
    params: list[Param] = []
    var_keyword = False
    for p in signature.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            raise TypeError(
                f"{owner} takes *{p.name}, but a model sends arguments by name; "
                "give each argument its own parameter"
            )
        if p.kind is p.VAR_KEYWORD:
            var_keyword = True
            continue
        if isinstance(p.default, FieldInfo):
            raise TypeError(
                f"parameter `{p.name}` of {owner} has a pydantic Field as its default; put the "
                f"Field in the annotation (`{p.name}: Annotated[T, Field(...)] = default`)"
            )
        annotation, doc, injected = _split_annotation(
            Any if p.annotation is p.empty else p.annotation
        )
        params.append(
            Param(
                name=p.name,
                annotation=annotation,
                default=PydanticUndefined if p.default is p.empty else p.default,
                doc=doc,
                injected=injected,
                positional_only=p.kind is p.POSITIONAL_ONLY,
            )
        )
    return Signature(tuple(params), var_keyword)


def _resolve(annotation: Any, name: str, func: Callable[..., Any], owner: str) -> Any:
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, _globals_of(func))  # what `inspect.signature(eval_str=True)` does
    except (NameError, SyntaxError) as e:
        raise TypeError(
            f"the annotation of parameter `{name}` of {owner} cannot be resolved "
            f"({type(e).__name__}: {e}); define the types it names at module level"
        ) from e


def _globals_of(func: Callable[..., Any]) -> dict[str, Any]:
    target: Any = func
    if isinstance(target, functools.partial):
        target = cast(Any, target.func)
    if inspect.ismethod(target):
        target = target.__func__
    if not inspect.isfunction(target):
        target = type(target).__call__
    return getattr(inspect.unwrap(target), "__globals__", {})


def _split_annotation(annotation: Any) -> tuple[Any, str | None, bool]:
    """Take the description and the `Injected` marker out of an `Annotated` type."""
    if get_origin(annotation) is not Annotated:
        return annotation, None, False
    base, *metadata = get_args(annotation)
    kept: list[Any] = []
    doc: str | None = None
    injected = False
    for item in metadata:
        if item is INJECTED:
            injected = True
        elif isinstance(item, str):
            doc = item
        else:
            if isinstance(item, FieldInfo) and item.description:
                doc = item.description
            kept.append(item)
    if kept:
        return Annotated[(base, *kept)], doc, injected
    return base, doc, injected


def is_struct(annotation: Any) -> bool:
    """Whether `annotation` is a pydantic model, a dataclass, a TypedDict or a NamedTuple."""
    if not isinstance(annotation, type):
        return False
    cls = cast(type[Any], annotation)
    return (
        issubclass(cls, BaseModel)
        or dataclasses.is_dataclass(cls)
        or is_typeddict(cls)
        or is_named_tuple(cls)
    )


def is_named_tuple(cls: type[Any]) -> bool:
    """Whether `cls` is a `typing.NamedTuple` class (a tuple with typed, named fields)."""
    fields: object = getattr(cast(object, cls), "_fields", None)
    return issubclass(cls, tuple) and isinstance(fields, tuple)
