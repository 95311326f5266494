"""The fleet table's order and filter, as the user picks them: `o` cycles the orders, `/` keeps
the servers whose name or address holds a text. Pure: rows in, rows out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from specmon.session.fleet_row import FleetRow, worst_first

SortKey = Callable[[FleetRow], tuple[bool, float] | str]


def _figure(value: Callable[[FleetRow], float | None], *, highest: bool) -> SortKey:
    """Sort key of a figure: the best first (highest or lowest), a server without it last."""

    def key(row: FleetRow) -> tuple[bool, float]:
        figure = value(row)
        if figure is None:
            return (True, 0.0)
        return (False, -figure if highest else figure)

    return key


ORDERS: tuple[tuple[str, SortKey | None], ...] = (
    ("worst first", None),
    ("server", lambda row: row.label.casefold()),
    ("tok/s", _figure(lambda row: row.decode_tok_s, highest=True)),
    ("speedup", _figure(lambda row: row.speedup, highest=True)),
    ("accept", _figure(lambda row: row.accept_length, highest=True)),
    ("cycle", _figure(lambda row: row.cycle_ms, highest=False)),
)
"""(name, sort key) in the order `o` goes through them; "worst first" is the table's own
(`worst_first`). Figures sort best first (the shortest cycle), servers without one last."""


def ordered(rows: Iterable[FleetRow], order: str, text: str = "") -> list[FleetRow]:
    """The rows holding `text` (`matching`), in `order` (one of `ORDERS`); ties stay worst first.

    Raises:
        KeyError: An order not in `ORDERS`.
    """
    key = dict(ORDERS)[order]
    rows = worst_first(matching(rows, text))
    return rows if key is None else sorted(rows, key=key)


def matching(rows: Iterable[FleetRow], text: str) -> list[FleetRow]:
    """The rows whose server name or address holds `text`, case aside (all for "")."""
    needle = text.strip().casefold()
    return [row for row in rows if needle in row.label.casefold() or needle in row.url.casefold()]


def next_order(order: str) -> str:
    """The order after `order` in `ORDERS`, round."""
    names: Sequence[str] = [name for name, _ in ORDERS]
    return names[(names.index(order) + 1) % len(names)]
