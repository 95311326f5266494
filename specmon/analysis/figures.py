"""The figures of one probe run, exactly as DESIGN.md §4 defines them."""

from __future__ import annotations

import itertools
from dataclasses import replace

from specmon.analysis.rates import exclusive_accept_length, exclusive_steps
from specmon.analysis.stats import percentile
from specmon.model import ProbeResult, RunFigures


def decode_verify_steps(result: ProbeResult) -> float | None:
    """Verify steps after the first token (V_decode).

    SGLang sends the prefill token on its own first chunk, so V_decode = V. If the first chunk
    already carried more (a coalesced stream), its share of V is removed in proportion.
    """
    v = result.verify_ct
    if v is None or not result.chunks:
        return None
    first = result.chunks[0].completion_tokens
    last = result.chunks[-1].completion_tokens
    if first <= 1 or last <= 1:
        return float(v)
    return v * (last - first) / (last - 1)


def run_figures(result: ProbeResult) -> RunFigures:
    """Derive TTFT, tok/s, accept length and cycle time from one probe's chunks."""
    if result.steps_source == "chunks" and result.verify_ct and result.scrapes is not None:
        # vLLM merges steps into one chunk when the client falls behind: its own count of the
        # probe's steps, when the probe ran alone, beats counting chunks.
        counted = exclusive_steps(*result.scrapes, result.chunks[-1].completion_tokens)
        if counted is not None:
            result = replace(result, verify_ct=counted, steps_source="counters")
    chunks = result.chunks
    first, last = chunks[0], chunks[-1]
    decode_tokens = last.completion_tokens - first.completion_tokens
    decode_s = last.t - first.t
    decode_tok_s = decode_tokens / decode_s if decode_tokens > 0 and decode_s > 0 else None
    v_decode = decode_verify_steps(result)
    speculative = v_decode is not None and v_decode > 0 and decode_tokens > 0
    accept = decode_tokens / v_decode if speculative and v_decode else None
    cycle_ms = 1000 * decode_s / v_decode if speculative and v_decode else None
    # Chunk gaps are cycle times only where each chunk is one verify step (not llama.cpp's).
    gaps = [1000 * (b.t - a.t) for a, b in itertools.pairwise(chunks)]
    step_gaps = speculative and result.chunks_are_steps and bool(gaps)
    server_accept = result.server_accept_length
    if server_accept is None and result.scrapes is not None:  # vLLM, llama.cpp: their counters
        server_accept = exclusive_accept_length(*result.scrapes, last.completion_tokens)
    elif server_accept is None and result.verify_ct and result.steps_source == "spec_verify_ct":
        server_accept = last.completion_tokens / result.verify_ct  # SGLang's own definition
    return RunFigures(
        completion_tokens=last.completion_tokens,
        prompt_tokens=result.prompt_tokens,
        ttft_ms=1000 * first.t,
        e2e_s=last.t,
        e2e_tok_s=last.completion_tokens / last.t if last.t > 0 else 0.0,
        decode_tok_s=decode_tok_s,
        accept_length=accept,
        server_accept_length=server_accept if speculative else None,
        verify_ct=result.verify_ct if speculative else None,
        cycle_ms=cycle_ms,
        cycle_ms_p50=percentile(gaps, 50) if step_gaps else None,
        cycle_ms_p95=percentile(gaps, 95) if step_gaps else None,
        cycle_source=result.steps_source if speculative else None,
    )
