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


def exposition_lines(names: list[str]) -> st.SearchStrategy[list[str]]:
    """Prometheus text lines of the given sample names — with mangled labels, NaN, ±Inf and
    non-numbers among the values, duplicated samples — mixed with arbitrary text."""
    sample = st.builds(
        lambda name, labels, value: f"{name}{{{labels}}} {value}\n",
        st.sampled_from([*names, "x"]),
        st.text(alphabet='abcgpu=",{} le0.1+Inf', max_size=20),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5)),
    )
    lines = st.lists(sample | st.text(max_size=40), max_size=8)
    return lines.map(lambda picked: picked + picked[:2])  # the first two again: duplicates
