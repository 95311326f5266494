"""How every surface states a what-if: the flag per draft length, the table's cells, the lines
around it and the `whatif --json` object (the CLI and the dashboard's `w` screen share these).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.by_load import LoadBand, band_end, band_label, band_of, levels_in_band
from specmon.analysis.catalogue import figure
from specmon.analysis.comparison import Verdict
from specmon.analysis.load import Level
from specmon.backend_facts import facts
from specmon.model import ServerInfo
from specmon.whatif.by_band import BandWhatIf
from specmon.whatif.prediction import Prediction, WhatIf
from specmon.wording import (
    DASH,
    age,
    crossover_line,
    duration,
    interval_text,
    num,
    pct,
    position_bars,
    speedup_text,
    streams,
)

# A prediction's figures are the catalogue's (`analysis.catalogue`), predicted: written as the
# runs' are wherever they are read.
DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")
BREAK_EVEN = figure("break-even accept length")

# The table's columns, in order, by the keys of `row`'s cells (`whatif` prints them all; the
# dashboard's `w` those that fit). The flag last: it is the longest.
LABELS = {"k": "k", "tokens": "tokens/step", "cycle": "cycle ms", "decode": "decode tok/s",
          "decode_interval": "interval", "speedup": "speedup", "speedup_interval": "95% interval",
          "break_even": "break-even", "notes": "", "flag": "flag"}  # fmt: skip


def draft_flag(info: ServerInfo, k: int) -> str:
    """The launch flag that sets draft length k on this server."""
    return facts(info.backend).draft_flag(info, k)


def speculation_off_flag(info: ServerInfo) -> str:
    """The launch flags that turn speculation off on this server."""
    return facts(info.backend).off_flag


PASSED_OVER = {True: "within interval", False: "not ranked"}
"""The table's note on the length predicted fastest where it is not named best: its gain lies
within its interval, or one cycle without a baseline ranks no other length (`passed_over`)."""


def passed_over(w: WhatIf) -> str | None:
    """Why the length predicted fastest is not the one named best, or None when it is: "k = 1:
    +2.0%, within its interval" (the `best:` line; its row's notes say it short, `row`)."""
    best, current = w.best, w.current
    if w.faster is not None or best.draft_tokens == current.draft_tokens:
        return None
    gain = best.decode_tok_s / current.decode_tok_s - 1
    why = "within its interval" if w.bounded else "not ranked: one cycle, no baseline"
    return f"k = {best.draft_tokens}: {pct(gain, signed=True)}, {why}"


def row(info: ServerInfo, p: Prediction, best: int, w: WhatIf | None = None) -> dict[str, str]:
    """One table row: the figures of one draft length, by column (LABELS' keys); with `w`, the
    length predicted fastest but not named best says why on its row (`PASSED_OVER`)."""
    interval = DASH
    if p.decode_low is not None and p.decode_high is not None:
        interval = f"{DECODE.format(p.decode_low)}–{DECODE.format(p.decode_high)}"
    gain = p.comparison.speedup if p.comparison else None
    be = p.comparison.break_even if p.comparison else None
    notes = []
    if p.measured:
        notes.append("measured")
    if p.draft_tokens == best:
        notes.append("best")
    elif w is not None and passed_over(w) is not None and p.draft_tokens == w.best.draft_tokens:
        notes.append(PASSED_OVER[w.bounded])
    if p.extrapolated:
        notes.append("extrapolated")
    return {
        "k": str(p.draft_tokens),
        "tokens": ACCEPT.value_text(p.tokens_per_step, unit=False),
        "cycle": CYCLE.value_text(p.cycle_ms, unit=False),
        "decode": DECODE.value_text(p.decode_tok_s, unit=False),
        "decode_interval": interval,
        # The catalogue's speedup text (`wording.speedup_text`) in two columns: the value, then
        # its interval, to the same decimals.
        "speedup": speedup_text(gain, interval=False) or DASH,
        "speedup_interval": interval_text(gain) or DASH,
        "break_even": BREAK_EVEN.value_text(be, unit=False),
        "notes": ", ".join(notes),
        "flag": draft_flag(info, p.draft_tokens),
    }


def summary(info: ServerInfo, w: WhatIf) -> list[str]:
    """The lines under the table: acceptance, the cycle model and its assumption, the best k
    (`WhatIf.faster`, as the advisor names it, or the current one)."""
    lines = [
        f"acceptance by position ({w.positions.source.value}, {w.positions.steps:.0f} drafting "
        f"steps): {position_bars(w.positions)}",
        f"cycle model ({w.cycle.fit.value}): {w.cycle.assumption}",
    ]
    if w.cycle.base_ms is not None:
        # The baseline's ms per token as the cycle model's T₀: to 2 decimals, not the figure's 1
        # (at 2–7 ms/token one decimal would round away a few percent of the model's input).
        lines.append(f"T₀ = baseline {w.cycle.base_ms:.2f} ms/token")
    current, faster = w.current, w.faster
    if faster is not None:
        gain = faster.decode_tok_s / current.decode_tok_s - 1
        lines.append(
            f"best: k = {faster.draft_tokens} ({draft_flag(info, faster.draft_tokens)}), "
            f"{DECODE.value_text(faster.decode_tok_s)} predicted, {pct(gain, signed=True)} vs "
            f"k = {w.draft_tokens} now, beyond its interval"
        )
    else:
        text = f"best: k = {w.draft_tokens} (now): no other draft length is predicted faster"
        why = passed_over(w)
        if why is not None:
            text += f" beyond its interval ({why})"
        lines.append(text)
    return lines


def prediction_to_dict(info: ServerInfo, p: Prediction) -> dict[str, Any]:
    """One entry of `predictions` in `whatif --json`."""
    c = p.comparison
    return {
        "draft_tokens": p.draft_tokens,
        "tokens_per_step": p.tokens_per_step,
        "cycle_ms": p.cycle_ms,
        "cycle_ms_low": p.cycle_low,
        "cycle_ms_high": p.cycle_high,
        "decode_tok_s": p.decode_tok_s,
        "speedup": p.speedup,
        "decode_tok_s_low": p.decode_low,
        "decode_tok_s_high": p.decode_high,
        "speedup_low": None if c is None else c.speedup.low,
        "speedup_high": None if c is None else c.speedup.high,
        "break_even_accept_length": None if c is None else c.break_even,
        "measured": p.measured,
        "extrapolated": p.extrapolated,
        "flag": draft_flag(info, p.draft_tokens),
    }


def whatif_to_dict(info: ServerInfo, w: WhatIf) -> dict[str, Any]:
    """The what-if part of `whatif --json`: predictions, best k, acceptance, cycle model."""
    cycle = w.cycle
    return {
        "predictions": [prediction_to_dict(info, p) for p in w.predictions],
        "draft_tokens_now": w.draft_tokens,
        "best_draft_tokens": w.choice.draft_tokens,
        "acceptance_by_position": list(w.positions.rates),
        "acceptance_source": w.positions.source.value,
        "non_drafting_share": w.non_drafting,
        "cycle_model": {
            "fit": cycle.fit.value,
            "assumption": cycle.assumption,
            "base_ms": cycle.base_ms,
            "alpha_ms": cycle.alpha_ms,
            "beta_ms": cycle.beta_ms,
            "points": [
                {"draft_tokens": p.draft_tokens, "cycle_ms": p.cycle_ms, "from": p.label}
                for p in cycle.points
            ],
        },
    }


def by_load_lines(
    bands: Sequence[LoadBand],
    ab: StoredAb | None = None,
    now_wall: float | None = None,
    url: str | None = None,
) -> list[str]:
    """The server's own figures by its running requests (`analysis.by_load`), a line a band,
    each beside the stored A/B's speedup at the streams in that band; then the A/B's levels
    and crossover (`ab_lines`: an A/B of another server than `url` named with its URL)."""
    if not bands:
        return [
            "by load: no decode seen with a running-requests gauge yet",
            *ab_lines(ab, now_wall, url),
        ]
    lines = [
        "by load (the server's /metrics, last 5 min; ab: the stored A/B at those streams):",
        f"  {'running':>8} {'k':>5} {'drafting':>8} {'accept':>6} {'tok/s':>7} "
        f"{'per request':>11} {'seen':>5}  ab",
    ]
    levels = ab.levels if ab is not None else ()
    for band in bands:
        k = "off" if band.off else num(band.draft_length, ".1f")
        gains = ", ".join(_ab_gain(lv) for lv in levels_in_band(levels, band.start)) or DASH
        lines.append(
            f"  {band_label(band.start):>8} {k:>5} {pct(band.duty_cycle):>8} "
            f"{num(band.accept_length, '.2f'):>6} {num(band.tok_s, '.0f'):>7} "
            f"{num(band.per_request_tok_s, '.1f'):>11} {duration(band.seconds):>5}  {gains}"
        )
    return lines + ab_lines(ab, now_wall, url)


_GAIN_WORD = {Verdict.WINNING: "gains", Verdict.LOSING: "loses", Verdict.WITHIN_NOISE: "noise"}


def _ab_gain(lv: Level) -> str:
    """ "+12% gains", "−5% loses", "+1% noise": one A/B level's speedup and what it says."""
    c = lv.comparison
    if c is None:
        return DASH
    # Whole percents, not the catalogue's speedup text: a list of levels beside each band, its
    # verdict in a word (`ab` writes each level in full).
    return f"{pct(c.speedup.value, signed=True, places=0)} {_GAIN_WORD[c.verdict]}"


def ab_lines(ab: StoredAb | None, now_wall: float | None, url: str | None = None) -> list[str]:
    """The stored A/B of this configuration: its speedup at each load measured, then where
    speculation stops paying (`crossover_line`, as `ab` says it). `url`: the server shown; an
    A/B of another server (of the same configuration) is named with its own URL."""
    if ab is None:
        return ["ab: none stored for this configuration (specmon ab measures each load)"]
    where = f" on {ab.url}" if url is not None and ab.url and ab.url != url else ""
    ago = f", {age(now_wall - ab.ended_at)} ago" if now_wall is not None else ""
    each = ", ".join(f"{_ab_gain(lv)} at {streams(lv.concurrency)}" for lv in ab.levels)
    return [f"ab #{ab.ab_id}{where}{ago}: {each}", crossover_line(ab.crossover)]


def adaptive_setting(info: ServerInfo, k: int, running: float | None) -> str:
    """Draft length k at the load of `running` requests, in an adaptive server's own settings
    (`BackendFacts.adaptive_setting`: SGLang's batch-size bucket, vLLM's Dynamic SD range);
    k = 0: no drafting there. A backend with no adaptive mode: its launch flag for k (for 0,
    the flags that turn speculation off)."""
    setting = facts(info.backend).adaptive_setting
    if setting is None:
        return draft_flag(info, k) if k else speculation_off_flag(info)
    start = band_of(running or 1) or 1
    return setting(start, band_end(start), k)


def advisor_flags(
    info: ServerInfo, *, differs: bool, running: float | None
) -> tuple[Callable[[int], str], str]:
    """The advisor's `flag_for` and `off_flag`: the launch flags, or on an adaptive server (SGLang's
    `speculative_adaptive`; vLLM, whose config is not served, one seen drafting otherwise than
    its flags: `differs`) its own setting for the load of `running` requests."""
    if info.args.get("speculative_adaptive") is True or differs:
        return (lambda k: adaptive_setting(info, k, running)), adaptive_setting(info, 0, running)
    return (lambda k: draft_flag(info, k)), speculation_off_flag(info)


def band_what_if_lines(info: ServerInfo, found: Sequence[BandWhatIf]) -> list[str]:
    """Per load band, the draft length predicted best there from its own acceptance and cycle
    (`whatif.by_band`): named only when its interval lies above the one running there
    (`WhatIf.faster`, the advisor's rule), in the server's adaptive setting for that band."""
    if not found:
        return []
    lines = ["what-if by load (each band's own accept length and cycle, per request):"]
    for each in found:
        label, result = band_label(each.band.start), each.answer.result
        if result is None:
            lines.append(f"  {label:>8}: {each.answer.reason}")
            continue
        current, faster = result.current, result.faster
        if faster is None:
            lines.append(
                f"  {label:>8}: k = {result.draft_tokens} "
                f"({DECODE.value_text(current.decode_tok_s)}): no other draft length is "
                "predicted faster beyond its interval"
            )
            continue
        gain = faster.decode_tok_s / current.decode_tok_s - 1
        setting = adaptive_setting(info, faster.draft_tokens, each.band.start)
        lines.append(
            f"  {label:>8}: k = {faster.draft_tokens} predicted "
            f"{DECODE.value_text(faster.decode_tok_s)}, "
            f"{pct(gain, signed=True)} vs k = {result.draft_tokens}, beyond its interval — "
            f"{setting}"
        )
    return lines
