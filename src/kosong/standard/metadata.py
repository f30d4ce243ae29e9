"""What a tool declares about itself: the standard's extension fields and MCP's hints.

The fields live on `Tool` (and `CallableTool2`, which carries them into its `base`); see
`ToolMetadata` for the list. This module gives the models of the structured fields, the checks
behind them (semantic versions, ISO 8601 dates), and the questions policies ask of a tool.

Field names: the standard's fields keep their names (`cache_ttl`, `sunset_date`...). MCP's
hints are snake_case attributes (`read_only_hint`) written in MCP's camelCase in JSON
(`readOnlyHint`); a tool accepts both spellings when it is created.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import NamedTuple

from kosong.tooling import Tool
from kosong.tooling._metadata import (
    HINT_ALIASES,
    METADATA_FIELDS,
    SEMVER_PATTERN,
    EstimatedTokens,
    TokenRange,
    ToolMetadata,
    parse_iso8601,
)

__all__ = [
    "HINT_ALIASES",
    "METADATA_FIELDS",
    "SEMVER_PATTERN",
    "EstimatedTokens",
    "SemVer",
    "TokenRange",
    "ToolMetadata",
    "is_destructive",
    "is_read_only",
    "is_safe_to_repeat",
    "is_sunset",
    "parse_iso8601",
    "parse_semver",
]


class SemVer(NamedTuple):
    """A parsed semantic version."""

    major: int
    """Incremented for incompatible changes."""
    minor: int
    """Incremented for compatible additions."""
    patch: int
    """Incremented for compatible fixes."""
    prerelease: str = ""
    """The part after `-`, if any."""
    build: str = ""
    """The part after `+`, if any (ignored when comparing precedence)."""

    def precedence_key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        """A key that orders versions by semver precedence (a release after its prereleases)."""
        pre: tuple[tuple[int, int | str], ...] = (
            tuple(
                (0, int(part)) if part.isdigit() else (1, part)
                for part in self.prerelease.split(".")
            )
            if self.prerelease
            else ()
        )
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += f"-{self.prerelease}"
        if self.build:
            text += f"+{self.build}"
        return text


def parse_semver(text: str) -> SemVer:
    """Parse `MAJOR.MINOR.PATCH[-prerelease][+build]`.

    Raises:
        ValueError: `text` is not a semantic version.
    """
    match = SEMVER_PATTERN.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH)")
    major, minor, patch, pre, build = match.groups()
    return SemVer(int(major), int(minor), int(patch), pre or "", build or "")


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
