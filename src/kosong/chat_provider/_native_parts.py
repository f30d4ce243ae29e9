"""Native-tool blocks in a history, as they go back to the provider that sent them.

Private: the providers use `for_provider`. A provider's answer may hold text with citations
(an Anthropic text block with `citations`, a Responses message whose text has
`annotations`): the text streams as `TextPart`s like any text, and the whole block follows as
a `NativeToolPart`. Sent back, the block goes as it came, and the text it holds is taken out
of the text part before it (it would otherwise go twice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kosong.message import ContentPart, NativeToolPart, TextPart

__all__ = ["for_provider"]


def for_provider(
    content: Sequence[ContentPart],
    provider: str,
    cited_text: Callable[[Mapping[str, Any]], str | None],
) -> list[ContentPart]:
    """The parts of an answer to send back to `provider`.

    Other providers' native parts are left out. A native part whose block holds text
    (`cited_text` says which text, None for other blocks) takes that text out of the text
    part before it; when that part does not end with it (the text was edited), the text goes
    alone and the block is left out.
    """
    out: list[ContentPart] = []
    for part in content:
        if isinstance(part, NativeToolPart):
            if part.provider != provider:
                continue
            text = cited_text(part.data)
            if text is not None:
                previous = out[-1] if out else None
                if not (isinstance(previous, TextPart) and previous.text.endswith(text)):
                    continue
                rest = previous.text[: len(previous.text) - len(text)]
                if rest:
                    out[-1] = TextPart(text=rest)
                else:
                    out.pop()
        out.append(part)
    return out
