"""Tools from plain functions (private; the public face is `FunctionTool` and `tool`).

`_tool` holds `FunctionTool` and `@tool`; `_build` makes one, once, from what `_signature`,
`_docstring`, `_parameters` and `_output_schema` read of the function; `_outcome` turns what
the function returns, or raises on purpose, into a `ToolReturnValue`.
"""
