"""The fleet table's orders and filter (session/fleet_order.py), on hand-made rows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specmon.session.fleet_order import ORDERS, matching, next_order, ordered
from specmon.session.fleet_row import FleetRow, Rank

ROW = FleetRow(
    url="http://10.0.0.1:8000",
    label="a",
    state="live",
    reason="",
    title=None,
    speculation="EAGLE3 2/1/3",
    speculative=True,
    decode_tok_s=None,
    accept_length=None,
    cycle_ms=None,
    speedup=None,
    verdict=None,
    baseline="none",
    baseline_valid=None,
    gpu=None,
    gpu_detail=None,
    gpu_warn=False,
    rank=Rank.WINNING,
)
ROWS = [
    replace(ROW, url="http://10.0.0.1:8000", label="box-b", decode_tok_s=90.0, cycle_ms=9.0,
            speedup=0.2, accept_length=2.5, rank=Rank.WINNING),
    replace(ROW, url="http://10.0.0.2:8000", label="Box-A", decode_tok_s=None, cycle_ms=None,
            rank=Rank.DOWN),
    replace(ROW, url="http://10.0.0.3:8000", label="box-c", decode_tok_s=120.0, cycle_ms=7.0,
            speedup=-0.1, accept_length=1.9, rank=Rank.LOSING),
]  # fmt: skip


def _labels(rows: list[FleetRow]) -> list[str]:
    return [row.label for row in rows]


@pytest.mark.parametrize(
    ("order", "labels"),
    [
        ("worst first", ["Box-A", "box-c", "box-b"]),
        ("server", ["Box-A", "box-b", "box-c"]),  # case aside
        ("tok/s", ["box-c", "box-b", "Box-A"]),  # fastest first, none last
        ("speedup", ["box-b", "box-c", "Box-A"]),
        ("accept", ["box-b", "box-c", "Box-A"]),
        ("cycle", ["box-c", "box-b", "Box-A"]),  # shortest first, none last
    ],
)
def test_each_order(order: str, labels: list[str]) -> None:
    assert _labels(ordered(ROWS, order)) == labels


def test_the_filter_matches_name_or_address_case_aside() -> None:
    assert _labels(matching(ROWS, "BOX-")) == ["box-b", "Box-A", "box-c"]
    assert _labels(matching(ROWS, "10.0.0.3")) == ["box-c"]
    assert _labels(matching(ROWS, " ")) == _labels(ROWS)
    assert _labels(ordered(ROWS, "tok/s", "box-a")) == ["Box-A"]
    assert matching(ROWS, "nothing") == []


def test_o_goes_round_every_order() -> None:
    names = [name for name, _ in ORDERS]
    order, seen = names[0], []
    for _ in names:
        order = next_order(order)
        seen.append(order)
    assert seen == [*names[1:], names[0]]
