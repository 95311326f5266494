"""Runs made to measure: a run of so many decode tokens at a given speed and accept length."""

from __future__ import annotations

from specmon.model import RunFigures


def run(tok_s: float, accept: float | None = None, tokens: int = 499) -> RunFigures:
    """A run of `tokens` decode tokens at `tok_s`, with `accept` tokens per verify step."""
    seconds = tokens / tok_s
    steps = tokens / accept if accept else None
    return RunFigures(
        completion_tokens=tokens + 1,
        prompt_tokens=20,
        ttft_ms=40.0,
        e2e_s=seconds + 0.04,
        e2e_tok_s=(tokens + 1) / (seconds + 0.04),
        decode_tok_s=tok_s,
        accept_length=accept,
        server_accept_length=None,
        verify_ct=round(steps) if steps else None,
        cycle_ms=1000 * seconds / steps if steps else None,
        cycle_ms_p50=None,
        cycle_ms_p95=None,
        decode_tokens=tokens,
        decode_s=seconds,
        decode_steps=steps,
    )
