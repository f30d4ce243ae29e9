"""The names two of kosong's packages agree on, kept below both (private).

`STANDARD_KEY`: `kosong.tooling`'s errors and function tools write the standard's data under
it, `kosong.standard` (whose public name it is) and `kosong.mcp` read it. `PRINCIPAL`: the
server's guard leaves who is calling under it in the ASGI scope, the MCP mount reads it.
"""

__all__ = ["PRINCIPAL", "STANDARD_KEY"]

PRINCIPAL = "kosong.principal"
"""The ASGI scope key holding who is calling (set by the server's guard)."""

STANDARD_KEY = "standard"
"""The key of `extras` under which the Tool Use standard's data travels with a result."""
