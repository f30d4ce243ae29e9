"""What a tool declares about itself: the standard's extension fields and MCP's hints.

The fields live on `Tool` (and `CallableTool2`, which carries them into its `base`); see
`ToolMetadata` (in `kosong.tooling`) for the list, and `kosong.utils.dates_and_versions` for
semantic versions and ISO 8601 dates. This module gives the questions policies ask of a tool.

Field names: the standard's fields keep their names (`cache_ttl`, `sunset_date`...). MCP's
hints are snake_case attributes (`read_only_hint`) written in MCP's camelCase in JSON
(`readOnlyHint`); a tool accepts both spellings when it is created.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from kosong.tooling import Tool

__all__ = ["is_destructive", "is_read_only", "is_safe_to_repeat", "is_sunset"]


def is_read_only(tool: Tool) -> bool:
    """Whether the tool says it does not change its environment."""
    return tool.read_only_hint is True


def is_safe_to_repeat(tool: Tool) -> bool:
    """Whether calling the tool twice with the same arguments does no more than calling once.

    True for tools whose hints say they are idempotent or read-only. Retries and shared
    executions are limited to these.
    """
    return tool.idempotent_hint is True or tool.read_only_hint is True


def is_destructive(tool: Tool, *, unannotated: bool = False) -> bool:
    """Whether the tool may destroy or overwrite data.

    True when `destructive_hint` says so. A tool that declares neither `destructive_hint` nor
    `read_only_hint` counts as `unannotated` says: MCP's own default treats such tools as
    destructive; kosong's default does not, so only declared tools are held.
    """
    if tool.destructive_hint is not None:
        return tool.destructive_hint and tool.read_only_hint is not True
    if tool.read_only_hint is True:
        return False
    return unannotated


def is_sunset(sunset: date | datetime, now: datetime) -> bool:
    """Whether `now` is after the sunset.

    After the whole day, for a date (in UTC); after the instant, for a date-time (one without
    an offset is taken as UTC).
    """
    if isinstance(sunset, datetime):
        moment = sunset if sunset.tzinfo is not None else sunset.replace(tzinfo=UTC)
        return now > moment
    return now.astimezone(UTC).date() > sunset
