"""Names that left a public module still import for one release, with a DeprecationWarning.

`MOVED` lists each (module, old name) and where the object lives now; docs/policies.md ("What
changed") lists the same names for users.
"""

from __future__ import annotations

import importlib

import pytest

MOVED: dict[tuple[str, str], str] = {
    ("kosong.standard", "arguments_digest"): "kosong.standard._digest:arguments_digest",
    ("kosong.standard", "final_event"): "kosong.standard._events:final_event",
    ("kosong.standard", "use_trace_id"): "kosong.standard._trace:use_trace_id",
    ("kosong.standard", "load_encoding"): "kosong.standard._tokens:load_encoding",
    ("kosong.standard", "HookPolicy"): "kosong.standard:Policy",
    ("kosong.standard", "TRACE_ID_PATTERN"): "kosong.standard._trace:TRACE_ID_PATTERN",
    ("kosong.standard", "CHARS_PER_TOKEN"): "kosong.standard._tokens:CHARS_PER_TOKEN",
    ("kosong.standard", "guess_kind"): "kosong.standard._tokens:guess_kind",
    ("kosong.standard", "chars_for_tokens"): "kosong.standard._tokens:chars_for_tokens",
    ("kosong.standard", "INLINE_LIMIT"): "kosong.standard._binary:INLINE_LIMIT",
    ("kosong.standard", "SUPPORTED_FORMATS"): "kosong.standard._strict:SUPPORTED_FORMATS",
    ("kosong.standard", "error_class_for"): "kosong.standard._codes:error_class_for",
    ("kosong.standard", "error_details"): "kosong.standard._codes:error_details",
    ("kosong.standard", "elicit_with"): "kosong.standard._caller:elicit_with",
    ("kosong.standard", "Elicitor"): "kosong.standard._caller:Elicitor",
    ("kosong.tooling", "dispatch"): "kosong.tooling._dispatch:dispatch",
    ("kosong.tooling.error", "STANDARD_KEY"): "kosong.standard:STANDARD_KEY",
    ("kosong.tooling.error", "unhandled_result"): "kosong.tooling._dispatch:unhandled_result",
}  # fmt: skip


def _resolve(target: str) -> object:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("module", "name"), sorted(MOVED))
def test_a_moved_name_still_imports_with_a_deprecation_warning(module: str, name: str) -> None:
    public = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"`{module}\.{name}` is deprecated"):
        old = getattr(public, name)
    assert old is _resolve(MOVED[module, name])
    assert name not in public.__all__


def test_from_import_of_a_moved_name_warns_at_the_importing_line() -> None:
    with pytest.warns(DeprecationWarning, match="use `Policy`") as caught:
        from kosong.standard import HookPolicy  # noqa: F401
    assert caught[0].filename == __file__


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import kosong.standard

    with pytest.raises(AttributeError, match=r"'kosong\.standard' has no attribute 'nothing_here'"):
        _ = kosong.standard.nothing_here
