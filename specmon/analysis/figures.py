"""The figures of one probe run, exactly as docs/design.md §4 defines them, and the checks that keep
their timing honest (a buffered stream, chunks that carry several steps).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from specmon.analysis.acceptance import (
    PositionAcceptance,
    from_chunks,
    from_counters,
    from_histogram,
)
from specmon.analysis.rates import (
    draft_acceptance,
    exclusive_accept_length,
    exclusive_steps,
    ran_alone,
)
from specmon.analysis.stats import percentile
from specmon.model import (
    AcceptSource,
    CycleBasis,
    ProbeChunk,
    ProbeResult,
    RunFigures,
    StepsSource,
)

BUFFERED_STEP_S = 1e-4
"""A verify step (or, without speculation, a decode step) shorter than 0.1 ms on average is no
GPU's: the chunks were held back and delivered together (a buffering proxy)."""
STEPS_PER_CHUNK_SLACK = 0.05
"""Chunks count as steps when their number is within 5% of the verify steps."""


def decode_verify_steps(result: ProbeResult) -> float | None:
    """Verify steps after the first token (V_decode).

    When the first chunk carries only the first token, V_decode = V. If it already carried more
    (a coalesced stream, llama.cpp holding back half a UTF-8 character), the steps behind those
    extra tokens are in V but not in the decode time from the first chunk: they are removed in
    proportion. vLLM's fallback count, the chunks after the first, never counted them: it is
    V_decode as it stands (removing them from it again subtracted those steps twice).
    """
    v = result.verify_ct
    if v is None or not result.chunks:
        return None
    if result.steps_source == StepsSource.CHUNKS:
        return float(v)
    first = result.chunks[0].completion_tokens
    last = result.chunks[-1].completion_tokens
    if first <= 1 or last <= 1:
        return float(v)
    return v * (last - first) / (last - 1)


def is_buffered(chunks: tuple[ProbeChunk, ...], steps: float | None) -> bool:
    """Whether the decode part of a stream arrived (nearly) all at once.

    A real server spends at least `BUFFERED_STEP_S` per step; chunks that arrive faster than
    that were buffered on the way and their gaps say nothing about the server.
    """
    if len(chunks) < 2:
        return False
    first, last = chunks[0], chunks[-1]
    decode_tokens = last.completion_tokens - first.completion_tokens
    count = steps if steps else len(chunks) - 1
    return decode_tokens > 0 and count > 0 and (last.t - first.t) / count < BUFFERED_STEP_S


def _with_counted_steps(result: ProbeResult) -> ProbeResult:
    """vLLM merges steps into one chunk when the client falls behind: its own count of the
    probe's steps, when the probe ran alone, beats counting chunks."""
    if result.steps_source == StepsSource.CHUNKS and result.verify_ct and result.scrapes:
        counted = exclusive_steps(*result.scrapes, result.chunks[-1].completion_tokens)
        if counted is not None:
            return replace(result, verify_ct=counted, steps_source=StepsSource.COUNTERS)
    return result


def step_cycles(
    chunks: tuple[ProbeChunk, ...], steps: float
) -> tuple[list[float], CycleBasis] | None:
    """The draft+verify cycle of every verify step of a run, in ms, and what they rest on.

    Where the chunks are the steps (their number within `STEPS_PER_CHUNK_SLACK` of `steps`),
    the chunk gaps are the cycles. Where each carries several (SGLang's `stream_interval` > 1
    sends once enough tokens are held, chunks coalesced under load, vLLM merging steps), a gap
    spans a whole number of steps: k = its length over the mean cycle, rounded (at least 1),
    and it counts as k steps of gap / k each.
    """
    gaps = [1000 * (b.t - a.t) for a, b in itertools.pairwise(chunks)]
    if not gaps or steps <= 0:
        return None
    if abs(steps / len(gaps) - 1) <= STEPS_PER_CHUNK_SLACK:
        return gaps, CycleBasis.CHUNK_GAPS
    mean = sum(gaps) / steps
    per_step = [gap / k for gap in gaps for k in [max(1, round(gap / mean))] for _ in range(k)]
    return per_step, CycleBasis.PER_STEP


def cycle_percentiles(
    chunks: tuple[ProbeChunk, ...], steps: float
) -> tuple[float, float, CycleBasis] | None:
    """p50 and p95 of the draft+verify cycle in ms, per verify step (`step_cycles`)."""
    cycles = step_cycles(chunks, steps)
    if cycles is None:
        return None
    per_step, basis = cycles
    return percentile(per_step, 50), percentile(per_step, 95), basis


def run_step_cycles(result: ProbeResult) -> list[float]:
    """Every verify step's cycle of a probe run, in ms: empty where its chunks do not time its
    steps (no speculation, a buffered stream, llama.cpp's one chunk per token). What the
    exporter's `specmon_cycle_seconds` histogram observes; the same steps as `run_figures`'s
    p50 and p95."""
    result = _with_counted_steps(result)
    steps = _timed_steps(result)
    cycles = step_cycles(result.chunks, steps) if steps else None
    return cycles[0] if cycles else []


def pooled_cycle_percentiles(runs: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """p50 and p95 of the draft+verify cycle over a set of runs: every verify step of every run
    (`run_step_cycles` of each) together, as the exporter's histogram counts them; not a median
    of each run's percentiles, which is no percentile of the steps. None without timed steps."""
    steps = [cycle for run in runs for cycle in run]
    if not steps:
        return None
    return percentile(steps, 50), percentile(steps, 95)


def _timed_steps(result: ProbeResult) -> float | None:
    """V_decode of a speculative, timed run whose chunks are its steps; else None."""
    chunks = result.chunks
    decode_tokens = chunks[-1].completion_tokens - chunks[0].completion_tokens
    v_decode = decode_verify_steps(result)
    if v_decode is None or v_decode <= 0 or decode_tokens <= 0 or not result.chunks_are_steps:
        return None
    timed = chunks[-1].t > chunks[0].t and not is_buffered(chunks, v_decode)
    return v_decode if timed else None


def position_acceptance(result: ProbeResult, chunks_are_steps: bool) -> PositionAcceptance | None:
    """A probe's acceptance by draft position, best source first (`analysis.acceptance`).

    The server's per-request histogram (SGLang's; vLLM's with per-request metrics on), whatever
    else ran meanwhile; else vLLM's and llama.cpp's per-position counters when the probe ran
    alone; else the stream's tokens per chunk when each chunk was one verify step (the
    positions are those the stream showed: up to the most drafts one step accepted).
    """
    if result.accepted_histogram is not None:
        return from_histogram(result.accepted_histogram, result.histogram_source)
    tokens = result.chunks[-1].completion_tokens
    if result.scrapes is not None and ran_alone(*result.scrapes, tokens):
        counted = draft_acceptance(*result.scrapes)
        return None if counted is None else from_counters(counted.per_position, counted.drafts)
    if not chunks_are_steps:
        return None
    widest = max(
        b.completion_tokens - a.completion_tokens for a, b in itertools.pairwise(result.chunks)
    )
    return from_chunks(result.chunks, widest - 1)


def server_accept_length(result: ProbeResult) -> tuple[float | None, AcceptSource | None]:
    """The server's own accept length for a probe, and where it came from.

    Its per-request figure when it sent one (SGLang always; vLLM with per-request metrics on);
    else vLLM's and llama.cpp's counters when the probe ran alone; else, on SGLang, its own
    definition from the request's `spec_verify_ct`.
    """
    if result.server_accept_length is not None:
        return result.server_accept_length, AcceptSource.DETAILS
    tokens = result.chunks[-1].completion_tokens
    if result.scrapes is not None:  # vLLM, llama.cpp: their counters
        counted = exclusive_accept_length(*result.scrapes, tokens)
        return counted, AcceptSource.COUNTERS if counted is not None else None
    if result.verify_ct and result.steps_source == StepsSource.SPEC_VERIFY_CT:
        return tokens / result.verify_ct, AcceptSource.DETAILS  # SGLang's own definition
    return None, None


def run_figures(result: ProbeResult) -> RunFigures:
    """Derive TTFT, tok/s, accept length and cycle time from one probe's chunks.

    A buffered stream keeps its token counts (accept length) but none of its timing: decode
    tok/s, cycle and its percentiles are None (`buffered` says why).
    """
    result = _with_counted_steps(result)
    chunks = result.chunks
    first, last = chunks[0], chunks[-1]
    decode_tokens = last.completion_tokens - first.completion_tokens
    decode_s = last.t - first.t
    v_decode = decode_verify_steps(result)
    speculative = v_decode is not None and v_decode > 0 and decode_tokens > 0
    steps = v_decode if speculative else None
    buffered = is_buffered(chunks, steps)
    timed = decode_tokens > 0 and decode_s > 0 and not buffered
    timed_steps = _timed_steps(result)
    spread = cycle_percentiles(chunks, timed_steps) if timed_steps else None
    positions = None
    if speculative:
        one_per_step = spread is not None and spread[2] == CycleBasis.CHUNK_GAPS
        positions = position_acceptance(result, one_per_step)
    server_accept, accept_source = server_accept_length(result)
    return RunFigures(
        completion_tokens=last.completion_tokens,
        prompt_tokens=result.prompt_tokens,
        ttft_ms=1000 * first.t,
        e2e_s=last.t,
        e2e_tok_s=last.completion_tokens / last.t if last.t > 0 else None,
        decode_tok_s=decode_tokens / decode_s if timed else None,
        accept_length=decode_tokens / steps if steps else None,
        server_accept_length=server_accept if speculative else None,
        server_accept_source=accept_source if speculative and server_accept else None,
        verify_ct=result.verify_ct if speculative else None,
        cycle_ms=1000 * decode_s / steps if steps and timed else None,
        cycle_ms_p50=spread[0] if spread else None,
        cycle_ms_p95=spread[1] if spread else None,
        cycle_source=result.steps_source if speculative else None,
        decode_tokens=decode_tokens,
        decode_s=decode_s if timed else None,
        decode_steps=steps,
        cycle_basis=spread[2] if spread else None,
        buffered=buffered,
        position_accept=positions.rates if positions else None,
        position_steps=positions.steps if positions else None,
        position_source=positions.source if positions else None,
        conditions=result.conditions,
    )
