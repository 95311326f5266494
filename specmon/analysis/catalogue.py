"""The metric catalogue: each figure of a speculative server's runs, and of their comparison
with a baseline, defined once with its unit, its help and the name every surface gives it
(docs/design.md §4, docs/metrics.md "The catalogue").

A surface states what it knows as one `Measured` (the runs it pools, the comparison against a
baseline that applies) and reads every figure through `CATALOGUE`: the exporter's gauges
(`specmon_…`, in base units), `check --json`'s keys, the snapshot exports' CSV/JSON columns and
Markdown headers, and the dashboard's figures (`View.figures`: the `i` screen, `--once --json`).
A name that is None leaves the figure off that surface. The names are a contract with scripts,
dashboards and alert rules: an entry carries each surface's name where they differ, and
`tests/analysis/test_catalogue.py` holds them to the names served before the catalogue.

The text renderers (`bench`'s pooled lines, `snapshots compare`, `check`'s findings, `ab`'s
table, the what-if and its advisor) and the dashboard's panels and tables look a figure up by its
key (`figure("cycle")`, once, at import) and write it with its `written()` or `shown()`, or a
value of it (the runs' range beside it, the latest probe's, a prediction's) with its `format()`
or `value_text()`: a figure's digits, sign and unit are set here, once (`tests/test_surfaces.py`
and `tests/ui/test_catalogue_panels.py` read them back from what is shown; the few surfaces that
write fewer digits for room say so, and docs/metrics.md lists them).

A figure of the server's own `/metrics` (over all its requests, not a set of runs: the Server
panel's ITL) is a `ServerFigure`: no `Measured` states it and no surface lists it with the
catalogue, but its unit and digits are set here all the same (`server_figure(key)`, `format()`,
`value_text()`); the server's own value of a catalogued figure (its decode tok/s over all its
requests, its mean TTFT, its accept length) is written with that figure's.

Adding a figure: define it in `analysis` (a field or property of `Pooled` or `Comparison`), add
its `Figure` here, document it in docs/metrics.md; every surface that lists the catalogue then
serves it (new export columns join at the end, so no column moves), and a text renderer writes
it where it names it by key. The getters only read: a figure is computed where it is defined,
never here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specmon.analysis.comparison import Comparison
from specmon.analysis.pooled import Pooled
from specmon.wording import DASH, pct, speedup_text


@dataclass(frozen=True, slots=True)
class Measured:
    """What a surface knows of one speculative server: the input of every figure's getter."""

    pooled: Pooled | None = None
    """The runs it states, pooled (`analysis.pooled`): the dashboard's recent probes (the
    exporter's while they hold now), `check`'s probes, a stored snapshot's runs."""
    comparison: Comparison | None = None
    """Those runs against a baseline (`analysis.comparison.compare`); None where the surface
    shows none (no baseline; live, one that does not apply)."""


class _Written:
    """How a value of a figure is written for people, from its `unit`, `digits` and `signed`
    (a `Figure`'s and a `ServerFigure`'s alike)."""

    __slots__ = ()
    unit: str
    digits: int
    signed: bool

    def format(self, value: float | None) -> str | None:
        """A value of this figure to its `digits` (signed where `signed`); None when missing."""
        if value is None:
            return None
        return f"{value:{'+' if self.signed else ''}.{self.digits}f}"

    def value_text(self, value: float | None, *, unit: bool = True) -> str:
        """A value of this figure for a table or a panel: `format` with its unit beside it
        (none where `unit` is False: a column or a line that names it), a ratio as a signed
        percent (+21.0%), or "—" when missing."""
        if self.unit == "ratio":
            return pct(value, signed=True)
        text = self.format(value)
        if text is None:
            return DASH
        return f"{text} {self.unit}" if unit else text


@dataclass(frozen=True, slots=True)
class Figure(_Written):
    """One figure: what it is, how to read it from a `Measured`, and its name on each surface."""

    key: str
    """Its name: docs/metrics.md's catalogue table, the dashboard's `i` screen."""
    unit: str
    """Its unit as shown ("tok/s", "ms", "tokens/step", "ratio")."""
    help: str
    """One sentence: what it is (the exporter's HELP)."""
    get: Callable[[Measured], float | None]
    digits: int
    """Decimals when written for people."""
    prometheus: str | None = None
    """The exporter's gauge (`specmon_…`, base units); None: not exported."""
    prometheus_scale: float = 1.0
    """From `unit` to the gauge's base unit (ms → seconds: 1e-3)."""
    check_key: str | None = None
    """Its key in `check --json`; None: not there."""
    export_key: str | None = None
    """Its CSV/JSON column in `snapshots export`; None: not there."""
    markdown: str | None = None
    """Its column's header in the Markdown export; None: not there."""
    text: Callable[[Measured], str | None] | None = None
    """How people read it where plain digits would say less (the speedup with its interval);
    None: `digits` decimals."""
    signed: bool = False
    """Written with its sign, "+0.36", where the sign is what it says (the margin)."""

    def written(self, measured: Measured) -> str | None:
        """The figure for people: `text`, else `format`; None when missing."""
        if self.text is not None:
            return self.text(measured)
        return self.format(self.get(measured))

    def shown(self, measured: Measured) -> str:
        """`written` with its unit, a ratio as a signed percent (+21.0%), or "—" (the
        dashboard's)."""
        if self.text is not None:
            return self.text(measured) or DASH
        return self.value_text(self.get(measured))


def _pooled(read: Callable[[Pooled], float | None]) -> Callable[[Measured], float | None]:
    return lambda m: None if m.pooled is None else read(m.pooled)


def _compared(read: Callable[[Comparison], float | None]) -> Callable[[Measured], float | None]:
    return lambda m: None if m.comparison is None else read(m.comparison)


def _speedup_text(m: Measured) -> str | None:
    return None if m.comparison is None else speedup_text(m.comparison.speedup)


CATALOGUE: tuple[Figure, ...] = (
    Figure(
        "decode tok/s",
        "tok/s",
        "Decode tok/s of the runs, pooled: decode tokens / decode seconds (prefill excluded).",
        _pooled(lambda p: p.decode_tok_s),
        1,
        prometheus="specmon_probe_decode_tokens_per_second",
        check_key="decode_tok_s",
        export_key="decode_tok_s",
        markdown="decode tok/s",
    ),
    Figure(
        "accept length",
        "tokens/step",
        "Accept length of the runs, pooled: decode tokens / verify steps after the first token.",
        _pooled(lambda p: p.accept_length),
        2,
        prometheus="specmon_probe_accept_length",
        export_key="accept_length",
        markdown="accept",
    ),
    Figure(
        "cycle",
        "ms",
        "Mean draft+verify cycle of the runs, pooled: decode seconds / verify steps.",
        _pooled(lambda p: p.cycle_ms),
        1,
        prometheus="specmon_probe_cycle_seconds",
        prometheus_scale=1e-3,
        export_key="cycle_ms",
        markdown="cycle ms",
    ),
    Figure(
        "ms per token",
        "ms/token",
        "Decode time per token of the runs, pooled: 1000 / decode tok/s.",
        _pooled(lambda p: p.ms_per_token),
        1,
        prometheus="specmon_probe_decode_seconds_per_token",
        prometheus_scale=1e-3,
        check_key="ms_per_token",
        export_key="ms_per_token",
        markdown="ms/token",
    ),
    Figure(
        "TTFT",
        "ms",
        "Time to first token of the runs, pooled: the mean of their TTFTs (queueing and prefill "
        "included).",
        _pooled(lambda p: p.ttft_ms),
        0,
        prometheus="specmon_probe_ttft_seconds",
        prometheus_scale=1e-3,
        check_key="ttft_ms",
        export_key="ttft_ms",
        markdown="TTFT ms",
    ),
    Figure(
        "speedup",
        "ratio",
        "Decode tok/s of the runs over the baseline's, minus 1 (0.21 = 21% faster).",
        _compared(lambda c: c.speedup.value),
        3,
        prometheus="specmon_speedup_ratio",
        check_key="speedup",
        export_key="speedup_ratio",
        markdown="speedup",
        text=_speedup_text,
    ),
    Figure(
        "speedup low",
        "ratio",
        "Low end of the speedup's 95% interval (one probe: its spread assumed, docs/metrics.md).",
        _compared(lambda c: c.speedup.low),
        3,
        prometheus="specmon_speedup_ratio_low",
        check_key="speedup_low",
        export_key="speedup_ratio_low",
    ),
    Figure(
        "speedup high",
        "ratio",
        "High end of the speedup's 95% interval: below 0, speculation loses beyond the noise.",
        _compared(lambda c: c.speedup.high),
        3,
        prometheus="specmon_speedup_ratio_high",
        check_key="speedup_high",
        export_key="speedup_ratio_high",
    ),
    Figure(
        "break-even accept length",
        "tokens/step",
        "Accept length above which speculation wins: cycle / baseline ms per token.",
        _compared(lambda c: c.break_even),
        2,
        prometheus="specmon_break_even_accept_length",
        check_key="break_even_accept_length",
        export_key="break_even",
        markdown="break-even",
    ),
    Figure(
        "margin",
        "tokens/step",
        "Accept length minus break-even: it has the speedup's sign.",
        _compared(lambda c: c.margin),
        2,
        check_key="margin",
        export_key="margin",
        signed=True,
    ),
)
"""Every figure, in the order surfaces list them."""

_BY_KEY = {f.key: f for f in CATALOGUE}


def figure(key: str) -> Figure:
    """The figure named `key` (`Figure.key`); a name the catalogue lacks is a KeyError."""
    return _BY_KEY[key]


@dataclass(frozen=True, slots=True)
class ServerFigure(_Written):
    """A figure of the server's own `/metrics`, over all its requests (the Server panel): no
    set of runs states it, so it has no getter and no name on the surfaces that list the
    catalogue; its unit and digits are set here, once, for every place that writes it."""

    key: str
    """Its name: docs/metrics.md's catalogue section."""
    unit: str
    help: str
    """One sentence: what it is and where it is read from."""
    digits: int
    """Decimals when written for people."""
    signed: bool = False


SERVER_FIGURES: tuple[ServerFigure, ...] = (
    ServerFigure(
        "ITL",
        "ms",
        "Mean inter-token latency of the server's requests over the last minute, from its "
        "histogram: per token on SGLang, per engine step (a draft+verify cycle) on vLLM.",
        1,
    ),
)
"""The server's `/metrics` figures whose digits the catalogue sets (its TTFT is `TTFT`'s)."""

_SERVER_BY_KEY = {f.key: f for f in SERVER_FIGURES}


def server_figure(key: str) -> ServerFigure:
    """The server's figure named `key` (`ServerFigure.key`); an unknown name is a KeyError."""
    return _SERVER_BY_KEY[key]
