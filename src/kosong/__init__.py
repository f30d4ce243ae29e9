"""kosong: the tool-calling layer of LLM agents.

Public modules:

- `kosong.message`: content parts, tool calls and messages exchanged with a model.
- `kosong.tooling`: tools, their return values, and toolsets that dispatch tool calls.
- `kosong.utils.jsonschema`: JSON Schema helpers used when exporting tool definitions.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
