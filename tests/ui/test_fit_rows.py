"""Text cut with "…" where it stops (issue 38: a stale reason ended at `…/server_info:`, a
category at its fifth letter, with nothing to say that more followed)."""

from __future__ import annotations

import dataclasses

from textual.content import Content

from specmon.session.view import CategoryView
from specmon.ui.format import fit_rows
from specmon.ui.widgets.spec_panel import category_lines

BODY = (
    "#1 310.1 tok/s\n3 runs · 45m old\n"
    "[$stale]✗ flags differ: mem_fraction_static 0.8 → 0.9; too old: taken 45 min before[/]\n"
    "[dim]http://10.1.230.174:8001 · the baseline server[/]"
)


def _rows(markup: str) -> list[str]:
    return Content.from_markup(markup).plain.split("\n")


def test_what_fits_is_left_as_it_is() -> None:
    assert fit_rows(BODY, 80, 4) == BODY
    assert fit_rows(BODY, 36, 7) == BODY  # wrapped, it takes 7 rows of 36


def test_rows_past_the_last_end_in_an_ellipsis() -> None:
    rows = _rows(fit_rows(BODY, 36, 4))
    assert len(rows) == 4 and all(len(row) <= 36 for row in rows)
    assert rows[:2] == ["#1 310.1 tok/s", "3 runs · 45m old"]
    assert rows[2] == "✗ flags differ: mem_fraction_static"
    assert rows[3].endswith("…") and rows[3].startswith("0.8 → 0.9; too old")
    assert "[$stale]" in fit_rows(BODY, 36, 4)  # the styles stay


def test_unwrapped_lines_are_each_cut_with_an_ellipsis() -> None:
    rows = _rows(fit_rows(BODY, 20, 3, wrap=False))
    assert rows == ["#1 310.1 tok/s", "3 runs · 45m old", "✗ flags differ: mem…"]


def test_a_category_name_is_cut_with_an_ellipsis() -> None:
    names = [f.name for f in dataclasses.fields(CategoryView)]
    values = {"category": "translation", **{n: None for n in names if n != "category"}}
    (head, *_) = category_lines((CategoryView(**values),))
    assert "tran…" in head and "trans " not in head
