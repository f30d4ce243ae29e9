"""Arguments as a short key: `canonical_json` and `arguments_digest`."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given

from kosong.standard._digest import arguments_digest, canonical_json
from tests.tooling._strategies import json_values


@given(json_values())
def test_the_key_ignores_key_order_for_any_json_object(value: Any) -> None:
    if isinstance(value, dict):
        reordered = dict(reversed(list(value.items())))
        assert arguments_digest(value, False) == arguments_digest(reordered, False)
    assert arguments_digest({"v": value}, False) != arguments_digest({"v": value}, True)


@given(json_values())
def test_canonical_json_is_json_of_the_same_value_with_sorted_keys_and_no_spaces(
    value: Any,
) -> None:
    text = canonical_json(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_short_arguments_are_their_own_digest_and_long_ones_a_short_hash() -> None:
    assert arguments_digest({"b": 1, "a": "é"}, False) == 'o{"a":"é","b":1}'
    assert arguments_digest({"b": 1, "a": "é"}, True) == 's{"a":"é","b":1}'
    long = arguments_digest({"text": "x" * 500}, False)
    assert long.startswith("#") and len(long) == 33
    assert long != arguments_digest({"text": "x" * 499 + "y"}, False)
