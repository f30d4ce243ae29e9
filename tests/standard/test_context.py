"""CallContext: the parsed arguments and their digest, shared by the policies of a call."""

from __future__ import annotations

import json
from typing import Any

from _std_tools import make_call
from hypothesis import given
from hypothesis import strategies as st

from kosong.standard import context
from kosong.standard.context import UNPARSEABLE, CallContext, canonical_json
from kosong.tooling._arguments import DEFAULT_LIMITS


def ctx_for(arguments: Any) -> CallContext:
    return CallContext(make_call("tool", arguments), None)


async def test_the_digest_ignores_key_order_and_spacing() -> None:
    texts = ['{"a": 1, "b": [1, 2]}', '{"b":[1,2],"a":1}', ' { "b" : [ 1 , 2 ] , "a" : 1 } ']
    digests = {await ctx_for(text).arguments_digest() for text in texts}
    assert len(digests) == 1
    assert ctx_for('{"a": 1, "b": [2, 1]}').arguments_digest_nowait() not in digests


async def test_waiting_and_not_waiting_give_the_same_digest() -> None:
    for text in ['{"x": "é", "y": null}', "[1, 2.5]", None, "", '{"x": ']:
        fresh = ctx_for(text).arguments_digest_nowait()
        assert fresh == await ctx_for(text).arguments_digest()
        context._DIGESTS.clear()  # computed afresh, not remembered
        assert fresh == await ctx_for(text).arguments_digest()
        assert fresh == ctx_for(text).arguments_digest_nowait()


async def test_arguments_that_do_not_parse_are_digested_as_written() -> None:
    first, second = ctx_for('{"a": 1'), ctx_for('{"a":1')
    assert first.arguments_parsed is None  # not looked at yet
    assert await first.arguments_digest() != await second.arguments_digest()
    assert first.arguments_parsed is False and second.arguments_parsed is False
    assert await first.arguments() is UNPARSEABLE


async def test_a_remembered_digest_still_says_whether_the_arguments_parse() -> None:
    for text, parses in (('{"ok": true}', True), ('{"ok": tru', False)):
        ctx_for(text).arguments_digest_nowait()  # now remembered
        again = ctx_for(text)
        assert again.arguments_digest_nowait() is not None
        assert again.arguments_parsed is parses
        # The arguments themselves are still parsed when asked for.
        assert (await again.arguments() is UNPARSEABLE) is not parses


async def test_long_arguments_are_digested_only_once_parsed() -> None:
    text = json.dumps({"blob": "x" * (DEFAULT_LIMITS.offload_length + 1)})
    ctx = ctx_for(text)
    assert ctx.arguments_digest_nowait() is None  # parsing would stall the loop
    digest = await ctx.arguments_digest()  # parsed in a worker thread
    assert ctx.arguments_digest_nowait() == digest and ctx.arguments_parsed is True
    parsed_first = ctx_for(text)
    await parsed_first.arguments()
    assert parsed_first.arguments_digest_nowait() == digest


def test_the_remembered_digests_are_bounded() -> None:
    limit = context._MEMO_ENTRIES
    for i in range(limit + 10):
        ctx_for({"i": i}).arguments_digest_nowait()
    assert 0 < len(context._DIGESTS) <= limit
    long_text = json.dumps({"x": "y" * context._MEMO_TEXT})
    ctx_for(long_text).arguments_digest_nowait()
    assert long_text not in context._DIGESTS


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_the_fast_canonical_encoding_is_canonical_json(value: Any) -> None:
    parsed = json.loads(json.dumps(value))  # what parse_arguments would give
    fast = context._parsed_canonical_json
    assert fast(parsed) == canonical_json(parsed)
