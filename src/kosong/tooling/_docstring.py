"""Reading a tool function's docstring: its prose and its argument descriptions (private).

The parsing itself is `docstring-parser`'s (Google, NumPy and reST styles, picked
automatically); this module only decides what a tool takes from the result, and how strict to
be about it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection
from dataclasses import dataclass

import docstring_parser

from kosong.tooling._schema import check_parameter_names

__all__ = ["ParsedDocstring", "read_docstring"]


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    """What a tool takes from a docstring."""

    prose: str
    """The summary and body, without any section (Args, Returns, Raises, Examples...)."""
    arguments: dict[str, str]
    """The argument section: parameter name -> description."""
    without_arguments: str = ""
    """The docstring without its argument and return sections (its other sections kept, as
    `docstring-parser` writes them)."""
    has_sections: bool = False
    """Whether the docstring has an argument or a return section (an `Args: None` too)."""


_EMPTY = ParsedDocstring("", {})


def read_docstring(
    doc: str, parameters: Collection[str], *, needs_arguments: bool, strict: bool, owner: str
) -> ParsedDocstring:
    """Parse `doc` (already cleaned with `inspect.cleandoc`).

    Lenient (`strict=False`), anything that cannot be read gives no argument descriptions, and
    a one-line docstring is not even parsed (it cannot hold a section). Strict, a docstring
    that cannot be used is a ValueError that says why: it does not parse, `needs_arguments` is
    true but the docstring has no argument section, or it documents a name that is not in
    `parameters`.
    """
    if not strict and "\n" not in doc:
        return _EMPTY
    # `Args:` over a lone `None` (a function without parameters, documented as such) is an
    # argument section with no argument; docstring-parser would read no section at all.
    doc, emptied = _NO_ARGUMENTS.subn("", doc)
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError as e:
        if strict:
            raise ValueError(f"the docstring of {owner} cannot be parsed: {e}") from None
        return _EMPTY
    arguments = {
        p.arg_name: p.description.strip()
        for p in parsed.params
        if p.args[0] in _ARGUMENT_SECTIONS and p.description
    }
    prose = "\n\n".join(
        part.strip() for part in (parsed.short_description, parsed.long_description) if part
    )
    if strict:
        if needs_arguments and not arguments:
            raise ValueError(
                f"parse_docstring=True, but the docstring of {owner} has no argument section "
                f"describing its parameters ({', '.join(parameters)}); add one (Google style: "
                "an `Args:` section with `name: description` lines) or drop parse_docstring"
            )
        check_parameter_names(arguments, parameters, f"the docstring of {owner} documents")
    sections = bool(emptied) or any(
        m.args[0] in _ARGUMENT_SECTIONS | _RETURN_SECTIONS for m in parsed.meta
    )
    return ParsedDocstring(prose, arguments, _without_arguments(parsed, prose), sections)


def _without_arguments(parsed: docstring_parser.Docstring, prose: str) -> str:
    kept = [m for m in parsed.meta if m.args[0] not in _ARGUMENT_SECTIONS | _RETURN_SECTIONS]
    if not kept:
        return prose
    rest = copy.copy(parsed)
    rest.meta = kept
    style = parsed.style or docstring_parser.DocstringStyle.GOOGLE
    return re.sub(r"\n{3,}", "\n\n", docstring_parser.compose(rest, style=style)).strip()


_NO_ARGUMENTS = re.compile(
    r"^[ \t]*(?:Args|Arguments|Parameters|Params):[ \t]*\n[ \t]+None\.?[ \t]*(?:\n|\Z)", re.M
)

# docstring-parser reports attributes and keyword arguments as parameters too; only what the
# caller passes by name belongs in a tool's schema.
_ARGUMENT_SECTIONS = frozenset(
    {"param", "parameter", "arg", "argument", "key", "keyword", "other_param"}
)
# What the function gives back is the tool's result, which the model reads anyway.
_RETURN_SECTIONS = frozenset({"return", "returns", "yield", "yields"})
