"""`Kimi`: Moonshot's Kimi models through their OpenAI-compatible Chat Completions API.

Needs the `openai` extra (the `openai` extra).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Self

from kosong.chat_provider import OutputSchema
from kosong.chat_provider._base import forces_a_call, merged, spec_of
from kosong.chat_provider._openai_common import ChatCompletionsProvider
from kosong.dialects import Dialect, fix_tool
from kosong.formats import to_openai_chat_tool
from kosong.message import ContentPart, VideoURLPart
from kosong.tooling import Tool

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "KIMI_MODELS", "Kimi", "KimiSpec"]

DEFAULT_MODEL = "kimi-k2.6"
"""The model used when none is given and `KIMI_MODEL` is not set."""
DEFAULT_BASE_URL = "https://api.moonshot.ai/v1"
"""The API used when no `base_url` is given and `KIMI_BASE_URL` is not set."""


class KimiSpec(NamedTuple):
    """How a Kimi model family thinks, and whether it takes a forced tool call while it does."""

    thinking: Literal["never", "default", "always"]
    """"never": no thinking (moonshot-v1); "default": thinks unless `thinking: {"type":
    "disabled"}`; "always": thinking cannot be turned off."""
    forced_while_thinking: bool = False
    """Whether a forced `tool_choice` ("required", a name) is taken while the model thinks."""


# Sources: https://platform.kimi.ai/docs/guide/use-kimi-k2-thinking-model (kimi-k2-thinking:
# "thinking forcibly enabled"; kimi-k2.6 / k2.5 think by default and take {"type":
# "disabled"}); kimi-k3 and kimi-k2.7-code always think (https://platform.kimi.ai/docs/
# models); Moonshot answers a forced tool_choice while thinking with HTTP 400 "tool_choice
# 'specified' is incompatible with thinking enabled", and no model page documents taking one,
# so no row says it does. The first row whose prefix the model id starts with wins.
KIMI_MODELS: tuple[tuple[str, KimiSpec], ...] = (
    ("moonshot-v1", KimiSpec("never")),
    ("kimi-k3", KimiSpec("always")),
    ("kimi-k2.7-code", KimiSpec("always")),
    ("kimi-k2-thinking", KimiSpec("always")),
    ("kimi-", KimiSpec("default")),
)
"""Model family (an id prefix) → how it thinks; see the sources in the module."""

_DEFAULT_SPEC = KimiSpec("default")


class Kimi(ChatCompletionsProvider):
    """Kimi through Moonshot's API: `Kimi(api_key="...")` is enough.

    - `model`: default `KIMI_MODEL`, else `DEFAULT_MODEL`.
    - `api_key`: a key, or a callable read before each request; default `KIMI_API_KEY`, read
      before each request (a `ValueError` names it when neither is there).
    - `base_url`: default `KIMI_BASE_URL`, else `DEFAULT_BASE_URL`.
    - `stream=False` makes one plain request instead of a streamed one (same parts).
    - Thinking comes back as `ThinkPart`s and goes out again as `reasoning_content` (even
      empty: Moonshot wants the field back on assistant messages when thinking is on);
      `with_thinking("off")` sends `thinking: {"type": "disabled"}`, any other effort
      `{"type": "enabled"}` (Moonshot has no effort levels). Other `thinking` fields given with
      `with_extra_body` (say `keep`) are kept, whichever is called first.
    - `with_extra_body({...})` (or keywords) adds Moonshot-specific fields to the body; a
      nested object is merged into the one already set.
    - Images and videos go as `image_url` / `video_url` parts, in tool messages too.
    - A `Tool` named `$...` (`Tool(name="$web_search", description="", parameters={})`) is one
      of Moonshot's builtin functions, sent as `{"type": "builtin_function", "function":
      {"name": "$web_search"}}`; the model's call of it is answered with its arguments, as
      Moonshot's guide says (the toolset does not run it).
    - Moonshot constrains every tool's arguments to its schema unless the tool says
      `strict: false` (https://platform.kimi.ai/docs/api/tool-use: "true (default, omitting
      is equivalent to true)"), so every tool is checked against Moonshot's own rules (MFJS),
      strict or not; a tool declaring `strict=False` is sent with `"strict": false`.
    - Tool schemas get Moonshot's safe fixes (an explicit `type` where the schema implies one,
      `type` moved into `anyOf` branches, local `$ref`s inlined: see `kosong.dialects`); a
      schema Moonshot would still reject raises `DialectError` before the request is sent.
    - `with_tool_choice`: "auto", "none", "required" or a tool's name, in the OpenAI format.
      Moonshot refuses a forced tool call ("required", a name) while the model thinks, and
      Kimi models think unless told not to (`KIMI_MODELS` says which always do): with those,
      `with_thinking("off")` first, or the `with_tool_choice` call is a `ValueError`.
      Moonshot has no allowed subset: `AllowedTools` sends only its tools.
      `with_parallel_tool_calls(bool)` sends `parallel_tool_calls`.
    - `max_tokens` in the generation kwargs goes as `max_completion_tokens` (Moonshot's
      reference marks `max_tokens` deprecated).

    Other keyword arguments go to `openai.AsyncOpenAI` (`timeout`, `max_retries`,
    `default_headers`, `http_client`...).
    """

    name = "kimi"
    _dialect: Dialect = "moonshot"
    _strict_dialect: Dialect = "moonshot"  # every Moonshot tool is strict unless told not to
    _key_variable = "KIMI_API_KEY"
    _model_variable = "KIMI_MODEL"
    _default_model = DEFAULT_MODEL
    _base_url_variable = "KIMI_BASE_URL"
    _default_base_url = DEFAULT_BASE_URL
    _reasoning_key = "reasoning_content"
    _tool_media = True
    _allowed_subset = False
    _custom_tools = False
    _extra_body: Mapping[str, Any] = MappingProxyType({})

    @property
    def extra_body(self) -> dict[str, Any]:
        """A copy of the extra body fields set with `with_extra_body`."""
        return copy.deepcopy(dict(self._extra_body))

    def with_extra_body(
        self, extra_body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Self:
        """A copy that adds these fields to the request body (Moonshot-specific options).

        Takes a dict (as the published package does), keywords, or both. A field holding an
        object is merged into the object already set (`{"thinking": {"keep": "all"}}` keeps
        the thinking type `with_thinking` set, and the other way round).

        Raises:
            ValueError: a field the provider sets itself (`model`, `messages`, `tools`...).
        """
        added = {**(extra_body or {}), **fields}
        self._refuse_managed(added)
        return self._copy_with(_extra_body=copy.deepcopy(merged(self._extra_body, added)))

    def _check_options(self) -> None:
        spec = spec_of(self._model, "", KIMI_MODELS, _DEFAULT_SPEC)
        if self._thinking == "off" and spec.thinking == "always":
            raise ValueError(
                f'Kimi: with_thinking("off") cannot be sent to {self._model}, which always '
                "thinks (Moonshot cannot turn its thinking off)"
            )
        thinks = spec.thinking == "always" or (
            spec.thinking == "default" and self._thinking != "off"
        )
        if forces_a_call(self._tool_choice) and thinks and not spec.forced_while_thinking:
            hint = (
                'call with_thinking("off") first, or use tool_choice="auto"'
                if spec.thinking == "default"
                else 'use tool_choice="auto" (this model always thinks)'
            )
            raise ValueError(
                f"Kimi: tool_choice={self._tool_choice!r} forces a tool call, which Moonshot "
                f"refuses while {self._model} thinks (and it thinks unless told not to): {hint}"
            )

    def _prepare_tool(self, tool: Tool) -> Tool:
        return tool if _is_builtin(tool) else fix_tool(tool, "moonshot")

    def _tool_entry(self, tool: Tool) -> dict[str, Any]:
        if _is_builtin(tool):
            return {"type": "builtin_function", "function": {"name": tool.name}}
        return to_openai_chat_tool(tool, provider="kimi")

    def _media_part(self, part: ContentPart) -> dict[str, Any] | None:
        if isinstance(part, VideoURLPart):
            return {"type": "video_url", "video_url": {"url": part.video_url.url}}
        return super()._media_part(part)

    def _check_output(self) -> None:
        super()._check_output()
        if self._output is not None and self._output.schema.get("type") != "object":
            raise ValueError(
                "Kimi: Moonshot's JSON Mode answers with a JSON object only: give output_type "
                "a model (or another type whose schema is an object)"
            )

    def _ask_format(self, body: dict[str, Any], output: OutputSchema) -> None:
        # Moonshot documents JSON Mode (json_object) and asks that the prompt say what the
        # object holds (https://platform.kimi.ai/docs/guide/use-json-mode-feature-of-kimi-api).
        body["response_format"] = {"type": "json_object"}
        schema = json.dumps(output.schema, ensure_ascii=False)
        said = f"Answer with one JSON object that matches this JSON Schema: {schema}"
        body["messages"].append({"role": "system", "content": said})

    def _thinking_fields(self) -> dict[str, Any]:
        fields = copy.deepcopy(dict(self._extra_body))
        if self._thinking is not None:
            kind = "disabled" if self._thinking == "off" else "enabled"
            thinking = fields.get("thinking")
            fields["thinking"] = {**(thinking if isinstance(thinking, dict) else {}), "type": kind}
        return fields


def _is_builtin(tool: Tool) -> bool:
    """Whether `tool` declares one of Moonshot's builtin functions (its name starts with `$`)."""
    return tool.name.startswith("$")
