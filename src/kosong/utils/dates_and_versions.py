"""Formats the Tool Use standard's fields are written in: semantic versions and ISO 8601 dates."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import NamedTuple

__all__ = ["SEMVER_PATTERN", "SemVer", "parse_iso8601", "parse_semver"]

# The grammar of https://semver.org (2.0.0), spelled with [0-9] since `\d` in Python also
# matches other scripts' digits.
_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
SEMVER_PATTERN = re.compile(
    rf"\A({_NUM})\.({_NUM})\.({_NUM})"
    rf"(?:-({_PRE_ID}(?:\.{_PRE_ID})*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z"
)
"""A semantic version, `MAJOR.MINOR.PATCH` with optional `-prerelease` and `+build`."""


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


def parse_iso8601(text: str) -> date | datetime:
    """Parse an ISO 8601 date (`2026-12-31`) or date-time (`2026-12-31T18:00:00Z`).

    Raises:
        ValueError: `text` is neither.
    """
    try:
        if "T" in text or " " in text:
            return datetime.fromisoformat(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO 8601 date or date-time; write it like '2026-12-31' "
            "or '2026-12-31T18:00:00Z'"
        ) from None
