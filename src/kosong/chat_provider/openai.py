"""OpenAI's APIs: `OpenAIChat` (Chat Completions, any compatible server) and `OpenAIResponses`.

Needs the `openai` extra (the `openai` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kosong.chat_provider._media import data_url
from kosong.chat_provider._openai_common import ChatCompletionsProvider, ToolMessageConversion
from kosong.chat_provider._openai_responses import OpenAIResponses
from kosong.message import AudioURLPart, ContentPart, Message, ThinkPart

__all__ = ["OpenAIChat", "OpenAIResponses"]


class OpenAIChat(ChatCompletionsProvider):
    """Chat Completions against OpenAI or any compatible `base_url` (vLLM, Ollama, DeepSeek...).

    - `model`: required (or `OPENAI_MODEL`).
    - `api_key`: a key, or a callable read before each request; default `OPENAI_API_KEY`,
      read before each request (a `ValueError` names it when neither is there).
    - `base_url`: default `OPENAI_BASE_URL`, else OpenAI's.
    - `reasoning_key`: the delta field a compatible server streams its thinking in (say
      `"reasoning_content"`); it comes back as `ThinkPart`s and goes out again in that field.
    - `stream=False` makes one plain request instead of a streamed one (same parts).
    - Tool messages take text only (the API's rule): several text parts go as a list of text
      parts, an image or other medium as a short placeholder (`[image: image/png, 146.5 KB,
      not shown]`); `tool_message_conversion="extract_text"` sends their text alone.
      Images in user messages go as `image_url` parts, a `data:audio/wav|mp3` clip as
      `input_audio`.
    - `with_thinking(effort)` sends `reasoning_effort` (the effort as named: "low" ...
      "xhigh"; "max" where the model takes it, GPT-5.6 and later, else "xhigh", the highest
      value before them); "off" leaves the field out, as the published package does.
    - `with_tool_choice(choice)` sends `tool_choice` ("auto", "none", "required", or
      `{"type": "function", "function": {"name": ...}}` for a tool's name).
    - `max_tokens` in the generation kwargs goes as `max_completion_tokens` (`max_tokens` is
      deprecated and refused by reasoning models).
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
        api_key: str | Callable[[], str] | None = None,
        base_url: str | None = None,
        reasoning_key: str | None = None,
        tool_message_conversion: ToolMessageConversion = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        stream: bool = True,
        **client_kwargs: Any,
    ) -> None:
        """Talk to `model` at `base_url` (see the class doc for defaults).

        Raises:
            ValueError: no model, or no API key, was given or found in the environment.
        """
        super().__init__(
            model=model,
            api_key=api_key,
            base_url=base_url,
            tool_message_conversion=tool_message_conversion,
            generation_kwargs=generation_kwargs,
            stream=stream,
            **client_kwargs,
        )
        self._reasoning_key = reasoning_key

    def _history_fields(self, history: Sequence[Message]) -> dict[str, Any]:
        # A compatible server that keeps thinking (`reasoning_key`) refuses a history holding
        # reasoning without `reasoning_effort` (kimi-cli#1616): ask for the API's default,
        # "medium", unless an effort is set.
        thought = any(
            isinstance(part, ThinkPart)
            for message in history
            if message.role == "assistant"
            for part in message.content
        )
        asked = self._thinking is not None or "reasoning_effort" in self._generation_kwargs
        if self._reasoning_key and thought and not asked:
            return {"reasoning_effort": "medium"}
        return {}

    def _media_part(self, part: ContentPart) -> dict[str, Any] | None:
        if isinstance(part, AudioURLPart):
            inline = data_url(part.audio_url.url)
            kind = inline[0].removeprefix("audio/") if inline else ""
            if inline and kind in ("wav", "mp3", "mpeg"):
                audio_format = "mp3" if kind == "mpeg" else kind
                return {
                    "type": "input_audio",
                    "input_audio": {"data": inline[1], "format": audio_format},
                }
            return None
        return super()._media_part(part)
