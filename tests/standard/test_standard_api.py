"""The public surface of kosong.standard: sorted `__all__`, names that exist, docstrings."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "kosong.standard",
    "kosong.standard.binary",
    "kosong.standard.codes",
    "kosong.standard.compat",
    "kosong.standard.context",
    "kosong.standard.envelope",
    "kosong.standard.events",
    "kosong.standard.metadata",
    "kosong.standard.pagination",
    "kosong.standard.pipeline",
    "kosong.standard.policies",
    "kosong.standard.strict",
    "kosong.standard.tokens",
    "kosong.standard.trace",
]


def isort_order(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_exists_and_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__
    exported = list(module.__all__)
    assert exported == sorted(exported, key=isort_order)
    for attr in exported:
        obj = getattr(module, attr)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__doc__, f"{name}.{attr} has no docstring"


@pytest.mark.parametrize("name", MODULES)
def test_every_public_class_and_function_defined_here_is_exported(name: str) -> None:
    module = importlib.import_module(name)
    defined = {
        attr
        for attr, obj in vars(module).items()
        if not attr.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and obj.__module__ == name
    }
    assert defined <= set(module.__all__), defined - set(module.__all__)


def test_the_new_error_classes_are_exported_by_the_error_module() -> None:
    errors = importlib.import_module("kosong.tooling.error")
    for name in (
        "ToolTimeoutError",
        "ToolRateLimitedError",
        "ToolNetworkError",
        "ToolPermissionDeniedError",
        "ToolUnauthorizedError",
        "ToolResourceNotFoundError",
        "ToolQuotaExceededError",
        "ToolDeprecatedError",
        "ToolRepeatedCallError",
    ):
        assert name in errors.__all__
    assert list(errors.__all__) == sorted(errors.__all__)
