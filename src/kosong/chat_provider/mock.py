"""`MockChatProvider`: a chat provider that streams exactly the parts it is given."""

from __future__ import annotations

from collections.abc import Sequence

from kosong.chat_provider import StreamedMessagePart, TokenUsage
from kosong.chat_provider._base import CompletedMessage, ProviderBase
from kosong.message import Message
from kosong.tooling import Tool

__all__ = ["MockChatProvider"]


class MockChatProvider(ProviderBase):
    """Streams the same parts on every call, for tests written against the published kosong.

    Each `generate()` streams fresh copies of `message_parts` in order; merging them is
    `generate`'s job. For scripted conversations (several turns, fragments of a chosen size,
    injected errors) use `kosong.chat_provider.scripted.ScriptedChatProvider`.
    """

    name = "mock"

    def __init__(
        self,
        message_parts: Sequence[StreamedMessagePart],
        *,
        id: str | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        """Stream `message_parts`; report `id` and `usage` as the response's."""
        super().__init__("mock")
        self.message_parts = list(message_parts)
        self._id = id
        self._usage = usage

    async def generate(
        self, system_prompt: str, tools: Sequence[Tool], history: Sequence[Message]
    ) -> CompletedMessage:
        """Stream copies of the parts."""
        parts = [p.model_copy(deep=True) for p in self.message_parts]
        return CompletedMessage(parts, id=self._id, usage=self._usage)
