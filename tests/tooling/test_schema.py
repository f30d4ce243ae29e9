from __future__ import annotations

from kosong.tooling._schema import tidy_schema


def test_tidy_drops_titles_everywhere_but_keeps_a_property_named_title() -> None:
    schema = {
        "title": "Params",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string", "default": "title"},
            "pair": {"type": "array", "items": [{"title": "A", "type": "string"}]},
            "any": {"anyOf": [{"title": "B", "type": "integer"}, {"type": "null"}]},
        },
    }
    assert tidy_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "default": "title"},
            "pair": {"type": "array", "items": [{"type": "string"}]},
            "any": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
    }


def test_tidy_puts_type_and_description_first() -> None:
    tidy = tidy_schema({"default": 1, "description": "d", "minimum": 0, "type": "integer"})
    assert list(tidy) == ["type", "description", "default", "minimum"]


def test_tidy_leaves_values_alone() -> None:
    schema = {"type": "object", "default": {"title": "kept", "type": "x"}, "enum": [{"title": 1}]}
    assert tidy_schema(schema) == schema
