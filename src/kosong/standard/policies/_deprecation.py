"""Deprecation: retired tools answer TOOL_DEPRECATED; tools on their way out warn.

For a tool with `deprecated=True` or a `sunset_date`:

- after the sunset date, the call does not run: it gets a TOOL_DEPRECATED error naming the
  replacement and the migration guide;
- before it (or with no date), the call runs and its metadata carries a warning
  (`metadata.warnings`) and `metadata.deprecation = {deprecated, sunset_date, replacement,
  migration_guide}`; the warning is added to the result's message too, since the model is the
  one that should move to the replacement.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._hints import is_sunset
from kosong.standard._pipeline import Forward, Policy
from kosong.tooling import Tool, ToolResult, ToolReturnValue
from kosong.tooling.error import ToolDeprecatedError
from kosong.utils.dates_and_versions import parse_iso8601
from kosong.utils.typing import JsonType

__all__ = ["DeprecationPolicy", "deprecation_warning"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def deprecation_warning(tool: Tool) -> str:
    """The warning for a deprecated tool that still works."""
    text = f"Tool `{tool.name}` is deprecated"
    if tool.sunset_date:
        text += f" and will be retired after {tool.sunset_date}"
    if tool.replacement:
        text += f"; use `{tool.replacement}` instead"
    if tool.migration_guide:
        text += f" (migration guide: {tool.migration_guide})"
    return text + "."


class DeprecationPolicy(Policy):
    """Refuse retired tools and warn about deprecated ones; see the module doc."""

    def __init__(
        self, *, clock: Callable[[], datetime] = _utc_now, warn_model: bool = True
    ) -> None:
        """Judge sunset dates by `clock` (aware UTC datetimes; for tests).

        Args:
            clock: The current time.
            warn_model: Also put the warning in the result's message, for the model.
        """
        self._clock = clock
        self._warn_model = warn_model
        self._sunsets: dict[str, date | datetime] = {}

    async def run(self, call: ToolCall, ctx: PolicyContext, forward: Forward) -> ToolResult:
        """Refuse, warn, or pass the call on."""
        tool = ctx.tool
        if tool.deprecated is not True and tool.sunset_date is None:
            return await forward(call, ctx)
        refusal = self._refusal(tool)
        if refusal is not None:
            return ToolResult(call.id, refusal)
        warning = self._warn(tool, ctx)
        result = await forward(call, ctx)
        if not self._warn_model:
            return result
        return ToolResult(result.tool_call_id, _with_warning(result.return_value, warning))

    def _refusal(self, tool: Tool) -> ToolDeprecatedError | None:
        """The error for a tool past its sunset date, else None."""
        if tool.sunset_date is None:
            return None
        sunset = self._sunsets.get(tool.sunset_date)
        if sunset is None:
            sunset = self._sunsets[tool.sunset_date] = parse_iso8601(tool.sunset_date)
        if not is_sunset(sunset, self._clock()):
            return None
        return ToolDeprecatedError(
            tool.name,
            replacement=tool.replacement,
            sunset_date=tool.sunset_date,
            migration_guide=tool.migration_guide,
        )

    @staticmethod
    def _warn(tool: Tool, ctx: PolicyContext) -> str:
        """Record the deprecation in the call's metadata; return the warning."""
        warning = deprecation_warning(tool)
        ctx.call_context.add_warning(warning)
        info: dict[str, JsonType] = {"deprecated": tool.deprecated is True}
        for key in ("sunset_date", "replacement", "migration_guide"):
            if (value := getattr(tool, key)) is not None:
                info[key] = value
        ctx.call_context.set_metadata("deprecation", info)
        return warning


def _with_warning(value: ToolReturnValue, warning: str) -> ToolReturnValue:
    message = f"{value.message}\n{warning}" if value.message else warning
    return value.model_copy(update={"message": message})
