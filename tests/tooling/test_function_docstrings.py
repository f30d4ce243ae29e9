"""Descriptions from docstrings: Google, NumPy and reST styles, precedence, parse_docstring."""

from __future__ import annotations

import inspect
import keyword
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from kosong.tooling import FunctionTool, Injected, tool


def google(city: str, days: int = 1) -> str:
    """Get the forecast.

    Looks the city up, slowly.

    Args:
        city: The city name,
            in English.
        days: How many days ahead.

    Returns:
        The forecast text.

    Raises:
        ValueError: for an unknown city.
    """
    return city


def numpy_style(city: str, days: int = 1) -> str:
    """Get the forecast.

    Looks the city up, slowly.

    Parameters
    ----------
    city : str
        The city name,
        in English.
    days : int, optional
        How many days ahead.

    Returns
    -------
    str
        The forecast text.
    """
    return city


def rest_style(city: str, days: int = 1) -> str:
    """Get the forecast.

    Looks the city up, slowly.

    :param city: The city name,
        in English.
    :param days: How many days ahead.
    :returns: The forecast text.
    """
    return city


@pytest.mark.parametrize("func", [google, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_each_style_gives_argument_descriptions(func: object) -> None:
    made = FunctionTool.from_function(func)  # type: ignore[arg-type]
    assert made.args["city"]["description"] == "The city name,\nin English."
    assert made.args["days"]["description"] == "How many days ahead."


@pytest.mark.parametrize(
    ("func", "rest"),
    [
        (google, "\n\nRaises:\n    ValueError: for an unknown city."),
        (numpy_style, ""),
        (rest_style, ""),
    ],
    ids=["google", "numpy", "rest"],
)
def test_argument_and_return_sections_read_into_the_schema_leave_the_description(
    func: object, rest: str
) -> None:
    made = FunctionTool.from_function(func)  # type: ignore[arg-type]
    # The parameters' docs are in the schema: the model would read them twice. Other
    # sections (Raises here) stay.
    assert made.description == "Get the forecast.\n\nLooks the city up, slowly." + rest


@pytest.mark.parametrize("func", [google, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_keep_docstring_sections_keeps_the_whole_docstring(func: object) -> None:
    made = FunctionTool.from_function(func, keep_docstring_sections=True)  # type: ignore[arg-type]
    assert made.description == inspect.getdoc(func)
    assert made.args["days"]["description"] == "How many days ahead."


def test_a_function_without_parameters_follows_the_same_docstring_rule() -> None:
    # One rule with or without parameters: the argument and return sections leave the
    # description (before, a function without parameters kept them, `Args: None` included).
    def no_parameters() -> str:
        """Say hello.

        Returns:
            A greeting.
        """
        return "hello"

    def args_none() -> str:
        """Say hello.

        Args:
            None

        Returns:
            str: A greeting.

        Raises:
            RuntimeError: never.
        """
        return "hello"

    def with_parameter(name: str) -> str:
        """Say hello.

        Args:
            name: Whom to greet.

        Returns:
            str: A greeting.

        Raises:
            RuntimeError: never.
        """
        return name

    assert tool(no_parameters).description == "Say hello."
    assert tool(args_none).description == "Say hello.\n\nRaises:\n    RuntimeError: never."
    assert tool(with_parameter).description == tool(args_none).description
    kept = FunctionTool.from_function(args_none, keep_docstring_sections=True)
    assert kept.description == inspect.getdoc(args_none)


def test_a_docstring_without_sections_is_the_description_as_written() -> None:
    def plain() -> str:
        """Say hello.

        Politely, in English.
        """
        return "hello"

    assert tool(plain).description == "Say hello.\n\nPolitely, in English."


@pytest.mark.parametrize("func", [google, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_parse_docstring_leaves_the_sections_out_of_the_description(func: object) -> None:
    made = FunctionTool.from_function(func, parse_docstring=True)  # type: ignore[arg-type]
    assert made.description == "Get the forecast.\n\nLooks the city up, slowly."
    assert made.args["city"]["description"] == "The city name,\nin English."


def test_precedence_field_descriptions_then_annotation_then_docstring() -> None:
    def f(
        a: Annotated[int, "from the annotation"],
        b: Annotated[int, Field(description="from the Field")],
        c: int,
        d: int,
    ) -> str:
        """F.

        Args:
            a: from the docstring
            b: from the docstring
            c: from the docstring
            d: from the docstring
        """
        return ""

    made = FunctionTool.from_function(f, field_descriptions={"a": "from the option"})
    assert {name: prop["description"] for name, prop in made.args.items()} == {
        "a": "from the option",
        "b": "from the Field",
        "c": "from the docstring",
        "d": "from the docstring",
    }
    # The params model carries the same descriptions as the schema.
    assert made.params.model_fields["a"].description == "from the option"


def test_field_descriptions_naming_no_parameter_is_a_value_error() -> None:
    def f(a: int) -> str:
        """F."""
        return ""

    with pytest.raises(ValueError, match=r"field_descriptions of tool `f` .* names 'b'"):
        FunctionTool.from_function(f, field_descriptions={"b": "?"})


class Location(BaseModel):
    city: str = Field(description="from the model")
    country: str


def test_struct_fields_take_docstring_descriptions_only_where_the_model_has_none() -> None:
    def where(loc: Location) -> str:
        """Where.

        Args:
            loc: The location.
            city: from the docstring
            country: from the docstring
        """
        return loc.city

    made = FunctionTool.from_function(where, parse_docstring=True)
    assert made.args["city"]["description"] == "from the model"
    assert made.args["country"]["description"] == "from the docstring"
    assert made.description == "Where."


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("Just a summary.", "has no argument section describing its parameters"),
        ("Summary.\n\nArgs:\n    a: The a.\n    zz: Not a parameter.", "documents 'zz'"),
        ("Summary.\n\nReturns:\n    Nothing much.", "has no argument section"),
        ("", "has no docstring"),
    ],
)
def test_parse_docstring_refuses_a_docstring_it_cannot_use(doc: str, message: str) -> None:
    def f(a: int) -> str:
        return ""

    f.__doc__ = doc
    with pytest.raises(ValueError, match=message):
        FunctionTool.from_function(f, parse_docstring=True, description="given")


def test_parse_docstring_does_not_ask_to_document_injected_or_absent_parameters() -> None:
    @tool(parse_docstring=True)
    def now(clock: Injected[object] = None) -> str:
        """The time.

        Args:
            clock: Where the time comes from (the application's).
        """
        return "noon"

    @tool(parse_docstring=True)
    def today() -> str:
        """Today's date."""
        return "monday"

    assert now.args == {} and now.description == "The time."
    assert today.description == "Today's date."


def test_lenient_parsing_ignores_what_it_cannot_read() -> None:
    @tool
    def f(a: int) -> str:
        """Summary.

        Args:
            this line is not an argument description
            zz: not a parameter of f
        """
        return ""

    assert "description" not in f.args["a"]
    assert f.description.startswith("Summary.")


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
            lambda name: not keyword.iskeyword(name)
        ),
        st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.]{0,40}[A-Za-z0-9.]", fullmatch=True),
        min_size=1,
        max_size=5,
    )
)
def test_google_argument_descriptions_round_trip(descriptions: dict[str, str]) -> None:
    lines = "".join(f"        {name}: {text}\n" for name, text in descriptions.items())
    params = ", ".join(f"{name}: int" for name in descriptions)
    namespace: dict[str, object] = {}
    source = f'def f({params}) -> str:\n    """Do it.\n\n    Args:\n{lines}    """\n'
    exec(source, namespace)
    made = FunctionTool.from_function(namespace["f"], parse_docstring=True)  # type: ignore[arg-type]
    assert {n: p["description"] for n, p in made.args.items()} == {
        n: t.strip() for n, t in descriptions.items()
    }
    assert made.description == "Do it."
