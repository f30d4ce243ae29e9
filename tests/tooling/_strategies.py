"""Hypothesis strategies shared by the tooling tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


def json_values(
    *, max_leaves: int = 10, max_size: int = 3, text: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[Any]:
    """Any value JSON can carry (finite floats only), nested up to `max_leaves` leaves."""
    text = text if text is not None else st.text()
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | text
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=max_size)
            | st.dictionaries(text, children, max_size=max_size)
        ),
        max_leaves=max_leaves,
    )
