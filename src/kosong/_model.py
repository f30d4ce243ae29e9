"""Private pydantic helpers shared by the message and tooling modules.

Two things the documents need and plain pydantic does not give:

1. Subclasses may override an inherited field with a bare class attribute (`name = "add"`,
   `type = "table"`). Pydantic rejects a non-annotated override, so `OverridableModelMeta`
   copies the base field's annotation onto it before pydantic sees the class. The declared
   value stays readable on the class too (`AddTool.name`), as the documents use it.
2. A base class whose subclasses register by their `type` string (`TypedModel`: ContentPart,
   DisplayBlock): validating a dict dispatches to the registered subclass, so models declared
   later are found.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import PydanticUndefined, core_schema

if TYPE_CHECKING:  # only the type checker needs its name; it has no public import path
    from pydantic._internal._model_construction import ModelMetaclass as _ModelMetaclass
else:
    _ModelMetaclass = type(BaseModel)  # pydantic's model metaclass, found at run time

__all__ = ["OverridableModelMeta", "TypedModel"]

_building = threading.local()
"""How many model classes this thread is building (see `OverridableModelMeta.__new__`)."""


class OverridableModelMeta(_ModelMetaclass):
    """Model metaclass that lets a subclass override an inherited field without an annotation."""

    def __new__(
        mcs,
        cls_name: str,
        bases: tuple[type[Any], ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> type:
        annotations: dict[str, Any] = namespace.setdefault("__annotations__", {})
        for base in bases:
            fields = getattr(base, "__pydantic_fields__", None)
            if not fields:
                continue
            for field_name, info in fields.items():
                if field_name in namespace and field_name not in annotations:
                    value = namespace[field_name]
                    # Methods and properties named like a field are the user's business.
                    if (callable(value) and not isinstance(value, type)) or isinstance(
                        value, property | classmethod | staticmethod
                    ):
                        continue
                    annotations[field_name] = info.annotation
        # While pydantic builds a class it asks `hasattr(base, field)` to spot fields that
        # shadow plain attributes; the defaults `__getattr__` reads are fields, not those.
        _building.depth = getattr(_building, "depth", 0) + 1
        try:
            return super().__new__(mcs, cls_name, bases, namespace, **kwargs)
        finally:
            _building.depth -= 1

    def __getattr__(cls, item: str) -> Any:
        # Pydantic moves a field's declared value into the field's default; read it there,
        # so `AddTool.name` works as it does on an instance (`toolset.remove(AddTool.name)`).
        if getattr(_building, "depth", 0):
            return cast(Any, super()).__getattr__(item)
        fields: object = cls.__dict__.get("__pydantic_fields__")
        info = cast(dict[str, Any], fields).get(item) if isinstance(fields, dict) else None
        if info is not None:
            default = info.default
            if default is not PydanticUndefined:
                return default
        return cast(Any, super()).__getattr__(item)


class TypedModel(BaseModel, metaclass=OverridableModelMeta):
    """A base whose subclasses register under their `type` string.

    A class deriving directly from `TypedModel` is a root (ContentPart, DisplayBlock) with its
    own `registry`; each subclass of a root must set a non-empty string `type` (a TypeError at
    definition otherwise) and is registered under it. Validating a dict as the root gives the
    registered subclass for its `type`; an unknown type is `_unregistered`'s answer, by default
    a clear error naming the known types.
    """

    type: str
    """The discriminator a subclass registers under, such as "text"."""

    registry: ClassVar[dict[str, type[TypedModel]]]
    """The subclasses of this root, by `type`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if TypedModel in cls.__bases__:  # a root: set before pydantic builds its schema
            type.__setattr__(cls, "registry", {})

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "registry" in cls.__dict__:
            return
        root = _root_of(cls)
        type_ = cls.model_fields["type"].default
        if not isinstance(type_, str) or not type_:
            raise TypeError(
                f"{root.__name__} subclass {cls.__qualname__} must set a non-empty string "
                f'`type`, e.g. `type = "table"`'
            )
        existing = root.registry.get(type_)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise TypeError(
                f"{root.__name__} type {type_!r} is already registered by "
                f"{existing.__module__}.{existing.__qualname__}; choose another `type` for "
                f"{cls.__qualname__}"
            )
        root.registry[type_] = cls  # redefining the same class (a module reload) replaces it

    @classmethod
    def _unregistered(cls, raw: Mapping[str, Any]) -> Self | None:
        """What a dict of an unknown `type` validates to; None makes it an error."""
        return None

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        if "registry" in source.__dict__:  # a root dispatches; its subclasses are plain models
            return cast(type[TypedModel], source)._dispatch_schema()
        return handler(source)

    @classmethod
    def _dispatch_schema(cls) -> core_schema.CoreSchema:
        """Core schema that validates a dict as the subclass registered for its `type`.

        Instances pass through. Serialization dumps the instance's own fields, so a subclass
        keeps everything it adds.
        """
        what = re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()  # ContentPart: content part

        def validate(value: Any) -> BaseModel:
            if isinstance(value, cls):
                return value
            if isinstance(value, Mapping):
                value = cast(Mapping[str, Any], value)
                type_ = value.get("type")
                registered = cls.registry.get(type_) if isinstance(type_, str) else None
                if registered is not None:
                    return registered.model_validate(value)
                fallback = cls._unregistered(value)
                if fallback is not None:
                    return fallback
                known = ", ".join(sorted(cls.registry))
                raise ValueError(f"unknown {what} type {type_!r}; known types: {known}")
            raise ValueError(
                f"expected a {what} or a dict with a 'type' key, got {type(value).__name__}"
            )

        def serialize(value: BaseModel, info: core_schema.SerializationInfo) -> Any:
            return value.model_dump(
                mode=info.mode,
                by_alias=bool(info.by_alias),
                exclude_none=info.exclude_none,
                exclude_defaults=info.exclude_defaults,
                exclude_unset=info.exclude_unset,
            )

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                serialize, info_arg=True
            ),
            json_schema_input_schema=core_schema.dict_schema(),
        )


def _root_of(cls: type[TypedModel]) -> type[TypedModel]:
    for klass in cls.__mro__:
        if "registry" in klass.__dict__:
            return cast(type[TypedModel], klass)
    raise TypeError(f"{cls.__qualname__} derives from no TypedModel root")  # pragma: no cover
