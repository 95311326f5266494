"""The View of a watched server's live state: what `LiveState` knows, as the dashboard shows it.

No I/O and no clock: `live_view` reads the state and the time it is given, and changes nothing.
Every figure comes from `analysis` (pooled runs, the comparison, validity), the same functions
`check`, `snapshots compare` and the exports use; what a figure lacks goes into the View's
`missing`, with why.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from specmon.analysis.acceptance import draft_length, impossible_accept_length, pooled_positions
from specmon.analysis.catalogue import CATALOGUE, Measured
from specmon.analysis.conditions import conditions_of
from specmon.analysis.figures import pooled_cycle_percentiles
from specmon.analysis.pooled import Pooled, ms_per_token, pool_groups
from specmon.backend_facts import find
from specmon.model import CycleBasis, RunFigures, SourceName, StepsSource
from specmon.session.figure_sources import probe_figure_sources
from specmon.session.gpu_tracker import unavailable
from specmon.session.history_zoom import COLUMNS, LIVE
from specmon.session.view import (
    BaselineView,
    CategoryView,
    DecodeView,
    DraftingView,
    FigureView,
    IdentityView,
    ServerView,
    SourceView,
    SpecView,
    StateName,
    View,
)
from specmon.session.watch import INFO_EVERY_S
from specmon.session.window import HISTORY_S, HISTORY_STEP_S, MEAN_SPAN_S, RATE_SPAN_S
from specmon.wording import (
    BUFFERED_STREAM,
    SPECULATION_NOT_SHOWN,
    SPECULATION_OFF,
    TAKE_BASELINE,
    brief_config,
    describe_config,
    partial_sums,
)

if TYPE_CHECKING:
    from specmon.session.live import LiveState


def live_view(live: LiveState, now_wall: float, stale_after: float) -> View:
    """The View of `live` at this moment (`stale_after`: seconds before a reading is stale)."""
    missing: list[tuple[str, str]] = []
    recent = live.recent()
    conditions = conditions_of(p.figures.conditions for p in live.probes)
    validity = live.baseline.validity(
        live.server.info, now_wall, live.gpus_now, conditions if live.probes else None
    )
    progress = live.bench if live.bench and live.bench.kind == "baseline" else None
    # A plain server and a baseline of its configuration are the same server: no speedup of
    # speculation to show (nor to export, nor to rank in the fleet).
    plain = live.server.info is not None and live.server.info.speculative is None
    baseline = live.baseline.view(
        now_wall, recent, validity, progress, live.why_no_baseline, plain=plain
    )
    # A replay's backend may not be installed here (`find`: None): no flags to name.
    kind = find(live.server.info.backend) if live.server.info is not None else None
    if kind is not None:
        baseline = replace(baseline, speculative_flags=kind.speculative_flags)
    if not baseline.present:
        why = live.why_no_baseline or "no baseline yet"
        missing.append(("speedup", f"{why} — {TAKE_BASELINE}"))
    elif plain:
        missing.append(("speedup", _speculation_off(live)))
    elif baseline.comparison is None:
        missing.append(("speedup", "no timed probe of this server yet"))
    spec = _spec(live, recent, baseline, missing, now_wall)
    sample = live.sample
    sources = (
        tuple(
            SourceView(n, sample.age(n), r.error, unavailable(r.value))
            for n, r in sample.readings.items()
        )
        if sample
        else ()
    )
    return View(
        _identity(live, stale_after),
        _decode(live, now_wall, recent, missing),
        spec,
        baseline,
        _server(live, missing),
        live.gpus.view(live.sample.error(SourceName.GPU) if live.sample else None, missing),
        tuple(live.events),
        sources,
        tuple(missing),
        live.bench,
        probe_figure_sources(
            live.probes[-1].figures if live.probes else None,
            live.server.info.backend if live.server.info else None,
        ),
        _figures(Measured(recent, baseline.comparison if baseline.applies else None)),
    )


def _identity(live: LiveState, stale_after: float) -> IdentityView:
    info = live.server.info
    sample = live.sample
    state: StateName
    if info is None:
        error = sample.error(SourceName.INFO) if sample else None
        state = "down" if error else "connecting"
        return IdentityView(
            live.url,
            None,
            None,
            None,
            "unknown",
            None,
            False,
            state,
            error or "",
            replay=live.replay,
        )
    started_at = live.server.started_at
    up: float | None = None
    if started_at is not None and sample is not None:
        up = max(0.0, sample.wall - started_at)
    elif sample is not None and live.server.first_seen is not None:
        up = sample.t - live.server.first_seen
    # Each source ages by its own cadence: server info is read every INFO_EVERY_S, so with
    # /metrics off or failing, info read 4 s ago is as fresh as a scrape read 1 s ago.
    limits = {SourceName.INFO: stale_after + INFO_EVERY_S, SourceName.METRICS: stale_after}
    ages = {name: a for name in limits if sample and (a := sample.age(name)) is not None}
    freshest = min(ages.values()) if ages else None
    if live.server.down_since is not None:
        errors = [r.error for r in sample.readings.values() if r.error] if sample else []
        state, detail = "down", errors[0] if errors else "no answer"
    elif all(age > limits[name] for name, age in ages.items()) or freshest is None:
        state, detail = "stale", f"last answer {freshest:.0f}s ago" if freshest else ""
    else:
        state, detail = "live", ""
    return IdentityView(
        live.url,
        info.title,
        info.model,
        info.tp_size,
        describe_config(info.speculative),
        up,
        started_at is not None,
        state,
        detail,
        brief_config(info.speculative),
        replay=live.replay,
    )


def _decode(
    live: LiveState, now_wall: float, recent: Pooled, missing: list[tuple[str, str]]
) -> DecodeView:
    last = live.probes[-1] if live.probes else None
    if not live.probe_enabled:
        probe_state = "off (--no-probe)"
    elif live.probe_paused:
        probe_state = "paused (p)"
    elif live.probe_error:
        probe_state = f"failing: {live.probe_error}"
    else:
        probe_state = f"every {live.probe_every:g} s"
    figures = last.figures if last else None
    if last is None:
        missing.append(("decode tok/s", f"no probe run yet (probe {probe_state})"))
    elif figures is not None and figures.buffered:
        missing.append(("decode tok/s", BUFFERED_STREAM))
    rate = live.server.window.decode_tok_s(RATE_SPAN_S)
    current = int(live.sample.t // HISTORY_STEP_S) if live.sample else 0
    tok_s = figures.decode_tok_s if figures else None
    zoomed = live.zoomed
    # Completed steps only: the sparkline moves once per step, not at every tick.
    points = tuple(total / count for step, total, count in live.history if step < current)
    return DecodeView(
        decode_tok_s=tok_s,
        ms_per_token=ms_per_token(tok_s),
        ttft_ms=figures.ttft_ms if figures else None,
        probe_age_s=now_wall - last.wall if last else None,
        history=zoomed.decode if zoomed else points,
        history_source=rate.source if rate else None,
        probe_state=probe_state,
        history_points=COLUMNS if zoomed else int(HISTORY_S / HISTORY_STEP_S),
        history_span=(zoomed.level if zoomed else LIVE).label,
        history_marks=zoomed.marks if zoomed else (),
        recent_tok_s=recent.decode_tok_s,
        recent_runs=recent.runs,
    )


def _speculation_off(live: LiveState) -> str:
    """Why no speculation shows: it is off, or on a server that shows it only once a
    request has finished (TensorRT-LLM), none has yet."""
    info, latest = live.server.info, live.server.window.latest
    kind = find(info.backend) if info is not None else None
    late = kind is not None and kind.shows_speculation_late
    finished = latest is not None and bool(latest.num_requests_total)
    return SPECULATION_NOT_SHOWN if late and not finished else SPECULATION_OFF


def _spec(
    live: LiveState,
    recent: Pooled,
    baseline: BaselineView,
    missing: list[tuple[str, str]],
    now_wall: float,
) -> SpecView:
    info = live.server.info
    enabled = None if info is None else info.speculative is not None
    runs = [p.figures for p in live.probes]
    spread = pooled_cycle_percentiles([p.step_cycles for p in live.probes])
    window = live.server.window.accept_length(MEAN_SPAN_S)
    latest = live.server.window.latest
    if enabled is False:
        missing.append(("accept length", _speculation_off(live)))
    elif recent.accept_length is None:
        missing.append(("accept length", "no probe with verify steps yet"))
    k = draft_length(info) if info is not None else None
    probe_accept, server_accept = recent.accept_length, window.value if window else None
    for name, value in (("accept length", probe_accept), ("server accept", server_accept)):
        if (why := impossible_accept_length(value, k)) is not None:
            missing.append((name, why))  # withheld, with why (acceptance.py)
    if impossible_accept_length(probe_accept, k):
        probe_accept = None
    if impossible_accept_length(server_accept, k):
        server_accept = None
    note = _cycle_note(runs[-1]) if runs else None
    if note and spread is None:
        missing.append(("cycle p50/p95", note))
    comparison = baseline.comparison if baseline.applies else None
    tokens: Counter[int] = Counter()
    if live.probes:
        for a, b in itertools.pairwise(live.probes[-1].result.chunks):
            tokens[b.completion_tokens - a.completion_tokens] += 1
    histogram = tuple(tokens.get(k, 0) for k in range(1, max(tokens, default=0) + 1))
    gap = live.traffic_gap()
    categories = _categories(live, now_wall) if enabled else ()
    missing.extend(
        (f"speedup of {c.category}", c.why_no_speedup) for c in categories if c.why_no_speedup
    )
    return SpecView(
        enabled=enabled,
        accept_length=probe_accept,
        server_accept_length=server_accept if window and enabled else None,
        server_accept_source=window.source if window and enabled and server_accept else None,
        accept_rate=latest.spec_accept_rate if latest and enabled else None,
        cycle_ms_p50=spread[0] if spread else None,
        cycle_ms_p95=spread[1] if spread else None,
        cycle_ms=recent.cycle_ms,
        cycle_note=note,
        break_even=comparison.break_even if comparison else None,
        margin=comparison.margin if comparison else None,
        verdict=comparison.verdict if comparison else None,
        tokens_per_cycle=histogram if enabled else (),
        accept_history=_accept_history(live) if enabled else (),
        accept_history_points=COLUMNS
        if live.zoomed
        else max(1, int(HISTORY_S / max(live.probe_every, 1.0))),
        accept_history_span=(live.zoomed.level if live.zoomed else LIVE).label,
        positions=pooled_positions(runs) if enabled else None,
        drafting=drafting_view(live) if enabled else None,
        categories=categories,
        traffic_gap=gap,
    )


def drafting_view(live: LiveState) -> DraftingView | None:
    """What the server drafts now (`SpecView.drafting`)."""
    info, sample = live.server.info, live.sample
    if info is None or sample is None:
        return None
    tracker = live.server.drafting
    figures = tracker.now(sample.t, RATE_SPAN_S)
    if figures is None:
        return None
    return DraftingView(
        configured=draft_length(info),
        draft_length=figures.draft_length,
        duty_cycle=figures.duty_cycle,
        off=figures.off,
        source=figures.source,
        history=tracker.history(sample.t, HISTORY_STEP_S),
        history_points=int(HISTORY_S / HISTORY_STEP_S),
        switches=tracker.switches,
        span_s=RATE_SPAN_S,
    )


def _accept_history(live: LiveState) -> tuple[float, ...]:
    if live.zoomed is not None:
        return live.zoomed.accept
    return tuple(v for _, v in live.accept_history)


def _categories(live: LiveState, now_wall: float) -> tuple[CategoryView, ...]:
    """Each category's recent probes pooled, and compared with its own baseline where one
    applies (`CategoryBaselines`); none for a set of one (the headline is it)."""
    info = live.server.info
    if len(live.by_category) < 2 or info is None:
        return ()
    pooled = pool_groups({name: list(runs) for name, runs in live.by_category.items()})
    bases = live.category_baselines
    gpu = live.gpus_now()
    speedups = bases.speedups(
        pooled,
        lambda category: bases.validity(
            category, info, now_wall, lambda s: live.baseline.lifetime_for(s, info), gpu
        ),
    )
    return tuple(
        CategoryView(
            name,
            p.accept_length,
            p.decode_tok_s,
            p.runs,
            speedups[name].comparison,
            speedups[name].why_none,
        )
        for name, p in pooled.items()
    )


def _server(live: LiveState, missing: list[tuple[str, str]]) -> ServerView:
    sample = live.sample
    reading = sample.readings.get(SourceName.METRICS) if sample else None
    latest = live.server.window.latest
    partial = partial_sums(latest.workers) if latest else None
    if reading is not None and reading.error:
        state = "off (--enable-metrics)" if "--enable-metrics" in reading.error else "failing"
        missing.append(("server figures", reading.error))
    else:
        state = partial or ("ok" if latest else "waiting")
    rate = live.server.window.decode_tok_s(RATE_SPAN_S)
    ttft, itl = live.server.window.latency_means(MEAN_SPAN_S)
    idle = live.server.window.generating(RATE_SPAN_S) is False
    running = latest.num_running_reqs if latest else None
    return ServerView(
        running=running,
        queued=latest.num_queue_reqs if latest else None,
        kv_usage=latest.token_usage if latest else None,
        decode_tok_s=rate.value if rate else None,
        decode_source=rate.source if rate else None,
        ttft_ms=1000 * ttft if ttft is not None else None,
        itl_ms=1000 * itl if itl is not None else None,
        metrics_state=state,
        idle=idle,
        running_stale=idle and running is not None and running > 0,
        rate_span_s=RATE_SPAN_S,
        latency_span_s=MEAN_SPAN_S,
        itl_per_step=bool(
            live.server.info is not None
            and (kind := find(live.server.info.backend)) is not None
            and kind.itl_per_step
        ),
        workers=latest.workers if latest else (),
    )


def _cycle_note(figures: RunFigures) -> str | None:
    """What the cycle percentiles of a run rest on, or why it has none."""
    if figures.buffered:
        return BUFFERED_STREAM
    if figures.cycle_source == StepsSource.TIMINGS:
        return "llama.cpp streams one chunk per token: no per-step gaps (cycle from its timings)"
    if figures.cycle_basis == CycleBasis.PER_STEP:
        return "chunks carried several steps: each gap divided by the steps it spans"
    return None


def _figures(measured: Measured) -> tuple[FigureView, ...]:
    """The catalogue's figures of the recent probes and their comparison, as the dashboard
    shows them."""
    return tuple(FigureView(f.key, f.get(measured), f.shown(measured)) for f in CATALOGUE)
