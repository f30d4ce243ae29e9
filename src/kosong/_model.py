"""Private pydantic helpers shared by the message and tooling modules.

Two things the documents need and plain pydantic does not give:

1. Subclasses may override an inherited field with a bare class attribute (`name = "add"`,
   `type = "table"`). Pydantic rejects a non-annotated override, so `OverridableModelMeta`
   copies the base field's annotation onto it before pydantic sees the class.
2. A base class whose subclasses register by their `type` string (ContentPart, DisplayBlock):
   validating a dict dispatches to the registered subclass, so models declared later are found.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from pydantic import BaseModel
from pydantic._internal._model_construction import ModelMetaclass
from pydantic_core import core_schema

__all__ = ["OverridableModelMeta", "register_type", "type_dispatch_schema"]


class OverridableModelMeta(ModelMetaclass):
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
        return super().__new__(mcs, cls_name, bases, namespace, **kwargs)


def type_dispatch_schema(
    base: type[BaseModel],
    registry: Mapping[str, type[BaseModel]],
    *,
    what: str,
    fallback: Callable[[Mapping[str, Any]], BaseModel] | None = None,
) -> core_schema.CoreSchema:
    """Core schema that validates a dict as the subclass of `base` registered for its `type`.

    Instances of `base` pass through. Serialization dumps the instance's own fields, so a
    subclass keeps everything it adds. Without a fallback, an unknown type is a clear error.
    """

    def validate(value: Any) -> BaseModel:
        if isinstance(value, base):
            return value
        if isinstance(value, Mapping):
            value = cast(Mapping[str, Any], value)
            type_ = value.get("type")
            cls = registry.get(type_) if isinstance(type_, str) else None
            if cls is not None:
                return cls.model_validate(value)
            if fallback is not None:
                return fallback(value)
            known = ", ".join(sorted(registry))
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
        serialization=core_schema.plain_serializer_function_ser_schema(serialize, info_arg=True),
        json_schema_input_schema=core_schema.dict_schema(),
    )


def register_type(registry: dict[str, Any], type_: str, cls: type, kind: str) -> None:
    """Register `cls` under `type_`; redefining the same class (a module reload) replaces it."""
    existing = registry.get(type_)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise TypeError(
            f"{kind} type {type_!r} is already registered by {existing.__module__}."
            f"{existing.__qualname__}; choose another `type` for {cls.__qualname__}"
        )
    registry[type_] = cls
