"""How specmon says things, once: every surface (dashboard, check, compare, export, bench)
words a missing value, a duration, a speedup, a verdict and a baseline's validity with these.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # analysis imports this module: type names only, no cycle at run time
    from specmon.analysis.acceptance import PositionAcceptance
    from specmon.analysis.comparison import Comparison, Speedup
    from specmon.analysis.load import Crossover
    from specmon.analysis.validity import Validity
    from specmon.model import SpecConfig, WorkerStatus

DASH = "—"
"""A figure that is missing (never 0)."""
NO_SPECULATION = "no speculation"
SPECULATION_OFF = "speculation is off on this server"
SPECULATION_NOT_SHOWN = "no speculation shown yet: this server shows it once a request has finished"
TAKE_BASELINE = "press b"
"""How a dashboard takes a baseline (the fleet table says `FLEET_TAKE_BASELINE` instead)."""
FLEET_TAKE_BASELINE = "Enter, then b"
"""The same from the fleet table, where `b` does nothing: open the server's dashboard first."""
NO_SPEC = "no spec"
"""`NO_SPECULATION` where a table cell has little room."""
BUFFERED_STREAM = (
    "the stream's chunks arrived together (a buffering proxy, or this machine too busy to read "
    "them as they came?): its timing is not used"
)


def num(value: float | None, spec: str = ".1f", unit: str = "") -> str:
    """`value` formatted with `spec` and a unit, or "—"."""
    if value is None:
        return DASH
    return f"{format(value, spec)}{(' ' + unit) if unit else ''}"


def pct(value: float | None, signed: bool = False, places: int = 1) -> str:
    """A fraction as a percentage: +21.0% (signed, `places` decimals; a value that rounds to
    zero is +0.0%, never -0.0%) or 46%."""
    if value is None:
        return DASH
    if not signed:
        return f"{value:.0%}"
    text = f"{value:+.{places}%}"
    return "+" + text[1:] if text.startswith("-") and not text.strip("-0.%") else text


def counted(n: int, noun: str, width: int = 0) -> str:
    """ "1 probe", "5 probes" (the number right-aligned in `width`, for columns)."""
    return f"{n:>{width}} {noun}{'' if n == 1 else 's'}"


def streams(n: int, width: int = 0) -> str:
    """ "1 stream", "4 streams": a load level (`counted`)."""
    return counted(n, "stream", width)


def _scaled(seconds: float) -> tuple[str, str, str]:
    """The number, its unit and the unit's short form: seconds under 90 s, minutes under 90 min,
    hours above."""
    if seconds < 90:
        return f"{seconds:.0f}", "s", "s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f}", "min", "m"
    return f"{seconds / 3600:.1f}", "h", "h"


def duration(seconds: float) -> str:
    """45 s, 12 min, 2.5 h: precise enough that a limit and a value never read the same."""
    number, unit, _ = _scaled(seconds)
    return f"{number} {unit}"


def age(seconds: float | None) -> str:
    """12s, 4m, 2.5h: the compact form for panels."""
    if seconds is None:
        return DASH
    number, _, short = _scaled(seconds)
    return f"{number}{short}"


def worker_name(url: str) -> str:
    """A worker behind a router by its address without the scheme: "w2:30000"."""
    return url.split("://", 1)[-1]


def worker_down(worker: WorkerStatus) -> str:
    """ "worker w2:30000 down since 12:01:05 (… connection refused …)"."""
    since = (
        time.strftime("%H:%M:%S", time.localtime(worker.down_since))
        if worker.down_since is not None
        else "?"
    )
    return f"worker {worker_name(worker.url)} down since {since} ({worker.error})"


def partial_sums(workers: Sequence[WorkerStatus]) -> str | None:
    """What a router's summed figures leave out, or None when every worker is in them:
    "partial: 1 of 3 workers left out: worker w2:30000 down since 12:01:05 (…)"."""
    down = [w for w in workers if not w.up]
    if not down:
        return None
    named = "; ".join(worker_down(w) for w in down)
    return f"partial: {len(down)} of {len(workers)} workers left out: {named}"


def describe_config(speculative: SpecConfig | None) -> str:
    """ "EAGLE3 steps=2 topk=1 draft=3", or "no speculation"."""
    return NO_SPECULATION if speculative is None else speculative.describe()


def brief_config(speculative: SpecConfig | None) -> str:
    """ "EAGLE3 2/1/3", "NGRAM d4", or "no spec": `describe_config` in a table cell."""
    return NO_SPEC if speculative is None else speculative.brief()


def speedup_text(gain: Speedup | None, interval: bool = True) -> str | None:
    """ "+21.0% [+18.2%, +23.9%]" (the interval only when there is one and `interval`), or
    None; to the decimal that tells the interval's ends from the value (`_places`)."""
    if gain is None:
        return None
    text = pct(gain.value, signed=True, places=_places(gain))
    bounds = interval_text(gain) if interval else None
    return f"{text} {bounds}" if bounds else text


def interval_text(gain: Speedup | None) -> str | None:
    """ "[+18.2%, +23.9%]", or None without an interval; to the speedup's decimals."""
    if gain is None or gain.low is None or gain.high is None:
        return None
    low, high = (pct(end, signed=True, places=_places(gain)) for end in (gain.low, gain.high))
    return f"[{low}, {high}]"


def _places(gain: Speedup) -> int:
    """One decimal, or up to three where an end of the interval would otherwise read the same
    as a value it differs from (a plain server against its own baseline read "+0.0% [-0.1%,
    +0.0%]": now "-0.02% [-0.09%, +0.04%]")."""
    ends = [end for end in (gain.low, gain.high) if end is not None]
    for places in (1, 2):
        shown = pct(gain.value, signed=True, places=places)
        if all(end == gain.value or pct(end, signed=True, places=places) != shown for end in ends):
            return places
    return 3


def verdict_text(comparison: Comparison) -> str:
    """ "winning", "LOSING" or "within noise", saying when there was no interval to judge by,
    when one probe gave it (its spread assumed, `one_probe_note`) and when too few rounds of a
    managed A/B gave it (tentative)."""
    word = comparison.verdict.value
    text = word.upper() if word == "losing" else word
    note = one_probe_note(comparison.speedup)
    if comparison.speedup.low is None:
        text += " (one run each: noise unknown)"
    elif note is not None:
        text += f" ({note})"
    elif comparison.tentative:
        text += " (tentative)"
    return text


def one_probe_note(gain: Speedup) -> str | None:
    """ "1 probe: spread assumed 3.5%": the interval of a single probe rests on a speculative
    server's typical run-to-run spread, not on its own (it has none); None otherwise."""
    if not gain.one_probe or gain.assumed is None:
        return None
    return f"1 probe: spread assumed {gain.assumed:.1%}"


def validity_mark(validity: Validity | None) -> str | None:
    """ "✓", "? unverified: …", "? conditions differ: …", "✗ reason; reason", or None when
    there is no baseline."""
    if validity is None:
        return None
    if not validity.valid:
        return "✗ " + "; ".join(validity.reasons)
    doubts = []
    if validity.unverified:
        doubts.append("unverified: " + "; ".join(validity.unverified))
    if validity.conditions:
        doubts.append("conditions differ: " + "; ".join(validity.conditions))
    return "? " + "; ".join(doubts) if doubts else "✓"


def stale_words(validity: Validity) -> str:
    """ "is stale: restarted since; different flags": why a baseline does not apply (after
    its name: "baseline #7 is stale: …"), on every surface that says it."""
    return "is stale: " + "; ".join(validity.reasons)


DRAFTING_OFF = "speculation off at this load"
"""An adaptive server drafting (almost) nothing at its current load."""


def draft_level_text(level: int) -> str:
    """ "k 3" or "off": a drafting setting (`analysis.drafting.draft_level`)."""
    return "off" if level == 0 else f"k {level}"


def drafting_short(draft_length: float | None, off: bool) -> str:
    """ "off" or "k1.0": what an adaptive server drafts now, after its flags in a table cell."""
    return "off" if off or draft_length is None else f"k{draft_length:.1f}"


def drafting_brief(draft_length: float | None, duty_cycle: float | None, off: bool) -> str:
    """ "k 3.0 100%", "off 0%", "k 2.0" (no duty cycle known): drafting now, in a table cell."""
    duty = f" {duty_cycle:.0%}" if duty_cycle is not None else ""
    if off or draft_length is None:
        return f"off{duty}"
    return f"k {draft_length:.1f}{duty}"


def crossover_line(cross: Crossover) -> str:
    """Where speculation stops paying, in one sentence."""
    said = cross.verdict.value if cross.verdict is not None else "not comparable"
    if cross.pays_up_to is None:
        at = DASH if cross.stops_at is None else streams(cross.stops_at)
        return f"Crossover: speculation wins at no load measured ({at}: {said})."
    text = f"Crossover: speculation wins up to {streams(cross.pays_up_to)}"
    if cross.exceptions:
        text += f" (not at {', '.join(map(str, cross.exceptions))})"
    if cross.stops_at is None:
        return text + ", the highest load measured."
    return text + f"; above that it stops paying ({streams(cross.stops_at)}: {said})."


def position_bars(positions: PositionAcceptance, *, percent: bool = True) -> str:
    """ "0:▇ 81%  1:▄ 55% …", or without `percent` "0▇ 1▄ …": one small bar per draft position
    (full height: always accepted)."""
    blocks = " ▁▂▃▄▅▆▇█"
    cells = []
    for i, rate in enumerate(positions.rates):
        bar = blocks[round(min(max(rate, 0.0), 1.0) * (len(blocks) - 1))]
        cells.append(f"{i}:{bar} {rate:.0%}" if percent else f"{i}{bar}")
    return ("  " if percent else " ").join(cells)
