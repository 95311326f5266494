"""Hypothesis strategies shared by the parser fuzz tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Any JSON value, nested a little."""
