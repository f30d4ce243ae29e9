"""Token counts: the standard's ratios, and tiktoken when it can load an encoding."""

from __future__ import annotations

import pytest

from kosong.standard import _tokens as tokens
from kosong.standard import count_tokens, estimate_tokens
from kosong.standard._tokens import CHARS_PER_TOKEN, chars_for_tokens, guess_kind, load_encoding


def test_the_standards_ratios() -> None:
    assert dict(CHARS_PER_TOKEN) == {"text": 4.0, "json": 3.5, "code": 2.0, "markdown": 3.5}
    assert estimate_tokens("a" * 400, "text") == 100
    assert estimate_tokens("a" * 350, "json") == 100
    assert estimate_tokens("a" * 200, "code") == 100
    assert estimate_tokens("a" * 350, "markdown") == 100
    assert estimate_tokens("abc", "text") == 1  # rounded up
    assert estimate_tokens("") == 0


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"a": [1, 2, 3]}', "json"),
        ("# Title\n\nSome words.", "markdown"),
        ("- one\n- two", "markdown"),
        ("def f(x):\n    return g(x);\n}", "code"),
        ("Just a sentence, nothing more.", "text"),
        ("{not json}, then words.", "text"),
    ],
)
def test_the_kind_is_guessed_when_not_given(text: str, kind: str) -> None:
    assert guess_kind(text) == kind


def test_chars_for_tokens_inverts_the_estimate() -> None:
    assert chars_for_tokens(100, "text") == 400
    assert chars_for_tokens(100, "code") == 200


def test_count_falls_back_to_the_estimate_when_tiktoken_cannot_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_FAILED", {"o200k_base"})
    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    count = count_tokens("a" * 40, kind="text")
    assert (count.tokens, count.exact, count.method) == (10, False, "estimate:text")


def test_a_failed_load_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_FAILED", set())
    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    assert load_encoding("no-such-encoding") is None
    assert "no-such-encoding" in tokens._FAILED


def test_tiktoken_counts_exactly_when_its_encoding_loads() -> None:
    encoding = load_encoding()
    if encoding is None:
        pytest.skip("tiktoken or its o200k_base encoding is not available (no network, no cache)")
    count = count_tokens("hello world")
    assert count.exact and count.method == "tiktoken:o200k_base"
    assert count.tokens == len(encoding.encode("hello world"))
