"""OpenAI's APIs: `OpenAIChat` (Chat Completions, any compatible server) and `OpenAIResponses`.

Needs the `openai` extra (`pip install 'kosong[openai]'`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kosong.chat_provider._base import model_from
from kosong.chat_provider._openai_common import ChatCompletionsProvider, ToolMessageConversion
from kosong.chat_provider._openai_responses import OpenAIResponses

__all__ = ["OpenAIChat", "OpenAIResponses"]


class OpenAIChat(ChatCompletionsProvider):
    """Chat Completions against OpenAI or any compatible `base_url` (vLLM, Ollama, DeepSeek...).

    - `model`: required (or `OPENAI_MODEL`).
    - `api_key`: default `OPENAI_API_KEY` (a `ValueError` names it when neither is there).
    - `base_url`: default `OPENAI_BASE_URL`, else OpenAI's.
    - `reasoning_key`: the delta field a compatible server streams its thinking in (say
      `"reasoning_content"`); it comes back as `ThinkPart`s and goes out again in that field.
    - `tool_message_conversion="extract_text"` sends tool results as plain text.
    - `with_thinking(effort)` sends `reasoning_effort`.
    - A tool declaring `strict=True` is sent strict, and checked against strict mode's rules
      first: a schema the API would reject raises `DialectError` before the request is sent.

    Parallel tool calls are assembled by their `index`, so interleaved fragments each reach
    their own call. Other keyword arguments go to `openai.AsyncOpenAI` (`timeout`,
    `max_retries`, `default_headers`, `http_client`...).
    """

    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        reasoning_key: str | None = None,
        tool_message_conversion: ToolMessageConversion = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(
            model=model_from(model, "OPENAI_MODEL", "OpenAIChat"),
            api_key=api_key,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            reasoning_key=reasoning_key,
            tool_message_conversion=tool_message_conversion,
            generation_kwargs=generation_kwargs,
            client_kwargs=client_kwargs,
        )
