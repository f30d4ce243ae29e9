"""Where the Tool Use standard's data travels with a result (private).

Below every package, because both sides of the data use it: `kosong.tooling`'s errors and
function tools write under this key, `kosong.standard` (whose public name it is:
`kosong.standard.STANDARD_KEY`) and `kosong.mcp` read it.
"""

__all__ = ["STANDARD_KEY"]

STANDARD_KEY = "standard"
"""The key of `extras` under which the Tool Use standard's data travels with a result."""
