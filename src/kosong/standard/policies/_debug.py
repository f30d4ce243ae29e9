"""Debug mode: results carry `debug_info` for developers.

With the policy on, every result's standard data gets `debug_info`: whether the cache answered,
the retries and each failed attempt's code, whether the run was shared, the time taken, the
trace id, what each policy noted (the cache key, why a retry was skipped, the approval), and
whatever the tool adds with `current_call().add_debug(...)`. The envelope shows it as its
top-level `debug_info`. Meant for development; leave it out in production.
"""

from __future__ import annotations

from kosong.message import ToolCall
from kosong.standard.context import PolicyContext
from kosong.standard.pipeline import Policy
from kosong.tooling import ToolReturnValue

__all__ = ["DebugPolicy"]


class DebugPolicy(Policy):
    """Turn debug mode on for every call; see the module doc."""

    def __init__(self, *, include_arguments: bool = False) -> None:
        """Turn debug mode on.

        With `include_arguments`, `debug_info` also has the raw arguments (they may hold
        secrets, hence off by default).
        """
        self._include_arguments = include_arguments

    def before(self, call: ToolCall, ctx: PolicyContext) -> ToolReturnValue | None:
        """Enable debug mode for the call and pass it on."""
        ctx.enable_debug()
        if self._include_arguments:
            ctx.call.add_debug("arguments", call.function.arguments)
        return None
