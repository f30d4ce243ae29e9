"""`Kimi`: Moonshot's Kimi models through their OpenAI-compatible Chat Completions API.

Needs the `openai` extra (`pip install 'kosong[openai]'`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Self

from kosong.chat_provider._openai_common import ChatCompletionsProvider, ToolMessageConversion
from kosong.dialects import Dialect, fix_tool
from kosong.tooling import Tool

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "Kimi"]

DEFAULT_MODEL = "kimi-k2.6"
"""The model used when none is given and `KIMI_MODEL` is not set."""
DEFAULT_BASE_URL = "https://api.moonshot.ai/v1"
"""The API used when no `base_url` is given and `KIMI_BASE_URL` is not set."""


class Kimi(ChatCompletionsProvider):
    """Kimi through Moonshot's API: `Kimi(api_key="...")` is enough.

    - `model`: default `KIMI_MODEL`, else `DEFAULT_MODEL`.
    - `api_key`: default `KIMI_API_KEY` (a `ValueError` names it when neither is there).
    - `base_url`: default `KIMI_BASE_URL`, else `DEFAULT_BASE_URL`.
    - Thinking comes back as `ThinkPart`s and goes out again as `reasoning_content`;
      `with_thinking("off")` turns it off, any other effort on.
    - Tool schemas get Moonshot's safe fixes (an explicit `type` where the schema implies one,
      `type` moved into `anyOf` branches, local `$ref`s inlined: see `kosong.dialects`); a
      schema Moonshot would still reject raises `DialectError` before the request is sent.

    Other keyword arguments go to `openai.AsyncOpenAI` (`timeout`, `max_retries`,
    `default_headers`, `http_client`...).
    """

    name = "kimi"
    _dialect: Dialect = "moonshot"
    _key_variable = "KIMI_API_KEY"
    _provider_title = "Kimi"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        tool_message_conversion: ToolMessageConversion = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` with `api_key` (see the class doc for defaults).

        Raises:
            ValueError: no API key was given and `KIMI_API_KEY` is not set.
        """
        super().__init__(
            model=model or os.environ.get("KIMI_MODEL") or DEFAULT_MODEL,
            api_key=api_key,
            base_url=base_url or os.environ.get("KIMI_BASE_URL") or DEFAULT_BASE_URL,
            reasoning_key="reasoning_content",
            tool_message_conversion=tool_message_conversion,
            generation_kwargs=generation_kwargs,
            client_kwargs=client_kwargs,
        )
        self._extra_body: dict[str, Any] = {}

    def with_extra_body(self, **extra_body: Any) -> Self:
        """A copy that adds these fields to the request body (Moonshot-specific options)."""
        clone = self.with_generation_kwargs()
        clone._extra_body = {**self._extra_body, **extra_body}
        return clone

    def _prepare_tools(self, tools: Sequence[Tool]) -> list[Tool]:
        return [fix_tool(tool, "moonshot") for tool in tools]

    def _thinking_fields(self) -> dict[str, Any]:
        fields = dict(self._extra_body)
        if self._thinking is not None:
            fields["thinking"] = {"type": "disabled" if self._thinking == "off" else "enabled"}
        return {"extra_body": fields} if fields else {}
