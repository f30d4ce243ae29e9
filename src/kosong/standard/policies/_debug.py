"""Debug mode: results carry `debug_info` for developers.

With the policy on, every result's standard data gets `debug_info`: whether the cache answered,
the retries and each failed attempt's code, whether the run was shared, the time taken, the
trace id, what each policy noted (the cache key, why a retry was skipped, the approval), and
whatever the tool adds with `current_call().add_debug(...)`. The envelope shows it as its
top-level `debug_info`. Meant for development; leave it out in production.
"""

from __future__ import annotations

from kosong.message import ToolCall
from kosong.standard._context import PolicyContext
from kosong.standard._pipeline import Policy
from kosong.tooling import ToolReturnValue

__all__ = ["DebugPolicy"]

_SHOWN = 4096
"""How much of the raw arguments `debug_info` shows."""


class DebugPolicy(Policy):
    """Turn debug mode on for every call; see the module doc."""

    observes_refusals = True  # every call, refused ones too

    def __init__(self, *, include_arguments: bool = False) -> None:
        """Turn debug mode on.

        With `include_arguments`, `debug_info` also has the raw arguments (they may hold
        secrets, hence off by default), cut after 4,096 characters.
        """
        self._include_arguments = include_arguments

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Enable debug mode for the call and pass it on."""
        ctx.enable_debug()
        if self._include_arguments:
            raw = call.function.arguments
            if raw is not None and len(raw) > _SHOWN:
                raw = f"{raw[:_SHOWN]}... ({len(raw) - _SHOWN:,} more characters)"
            ctx.call_context.add_debug("arguments", raw)
        return None
