"""Counter deltas and rates with reset detection, and server-side accept length over a window."""

from __future__ import annotations

from dataclasses import dataclass

from specmon.model import ServerMetrics


@dataclass(frozen=True, slots=True)
class Delta:
    """The increase of a counter between two scrapes."""

    value: float
    reset: bool
    """The counter went down: the server restarted; `value` counts from zero."""


def counter_delta(before: float | None, after: float | None) -> Delta | None:
    """Δ of a counter; a decrease means a restart, so the increase is `after` itself."""
    if before is None or after is None:
        return None
    if after < before:
        return Delta(after, reset=True)
    return Delta(after - before, reset=False)


def counter_rate(before: float | None, after: float | None, seconds: float) -> float | None:
    """Per-second rate of a counter over `seconds`; None when unknown or the window is empty."""
    delta = counter_delta(before, after)
    if delta is None or seconds <= 0:
        return None
    return delta.value / seconds


COUNTER_FIELDS = (
    "generation_tokens_total",
    "prompt_tokens_total",
    "num_requests_total",
    "spec_verify_calls_total",
    "realtime_decode_tokens_total",
    "decode_passes_total",
    "spec_drafts_total",
    "spec_draft_tokens_total",
    "spec_accepted_tokens_total",
    "decode_seconds_total",
)
"""The `ServerMetrics` fields that are plain cumulative counters."""


def any_reset(before: ServerMetrics, after: ServerMetrics) -> bool:
    """Whether any counter went down between two scrapes (a restart signal)."""
    return any(
        (d := counter_delta(getattr(before, name), getattr(after, name))) is not None and d.reset
        for name in COUNTER_FIELDS
    )


@dataclass(frozen=True, slots=True)
class WindowAccept:
    """Server-side accept length over a window, and where it came from."""

    value: float
    source: str
    """"drafts" (vLLM, llama.cpp: 1 + Δaccepted/Δdrafts), "counters" (SGLang 0.5.13+:
    Δgeneration_tokens/Δspec_verify_calls) or "gauge" (SGLang's 40-step window)."""


def server_accept_length(before: ServerMetrics, after: ServerMetrics) -> WindowAccept | None:
    """Accept length over the window between two scrapes (docs/design.md §4), best source first.

    vLLM, llama.cpp and TensorRT-LLM: their own mean acceptance length, 1 + Δaccepted/Δdrafts
    (per step that verified a draft). SGLang: Δgeneration_tokens_total / Δspec_verify_calls_total
    when both counters exist and requests finished in the window; otherwise the
    `spec_accept_length` gauge when it is non-zero.
    """
    drafts = counter_delta(before.spec_drafts_total, after.spec_drafts_total)
    accepted = counter_delta(before.spec_accepted_tokens_total, after.spec_accepted_tokens_total)
    if drafts is not None and accepted is not None and drafts.value > 0:
        return WindowAccept(1 + accepted.value / drafts.value, "drafts")
    tokens = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    verifies = counter_delta(before.spec_verify_calls_total, after.spec_verify_calls_total)
    if tokens is not None and verifies is not None and verifies.value > 0:
        return WindowAccept(tokens.value / verifies.value, "counters")
    if after.spec_accept_length:
        return WindowAccept(after.spec_accept_length, "gauge")
    return None


@dataclass(frozen=True, slots=True)
class DraftAcceptance:
    """What vLLM's and llama.cpp's draft counters say about a window (docs/design.md §4)."""

    drafts: float
    """Δ`spec_decode_num_drafts_total`: steps that verified a draft."""
    accept_length: float
    """1 + Δaccepted/Δdrafts: tokens per drafted step, bonus included (the servers' own
    "mean acceptance length")."""
    rate: float | None
    """Δaccepted/Δdraft_tokens: the share of draft tokens accepted."""
    per_position: tuple[float, ...]
    """Δaccepted at position i / Δdrafts: how often the i-th draft token is accepted."""
    steps: float | None
    """Decode steps from the counters, Δgeneration − Δrequests − Δaccepted (each step yields one
    token plus those it accepts; each request's first token comes from prefill). None without a
    request counter (llama.cpp). Above `drafts` when some steps drafted nothing (n-gram)."""
    tokens_per_step: float | None
    """(Δgeneration − Δrequests) / steps: what a probe's accept length measures."""


def draft_acceptance(before: ServerMetrics, after: ServerMetrics) -> DraftAcceptance | None:
    """The draft counters over the window between two scrapes; None without drafts in it."""
    drafts = counter_delta(before.spec_drafts_total, after.spec_drafts_total)
    accepted = counter_delta(before.spec_accepted_tokens_total, after.spec_accepted_tokens_total)
    if drafts is None or accepted is None or drafts.value <= 0:
        return None
    proposed = counter_delta(before.spec_draft_tokens_total, after.spec_draft_tokens_total)
    after_positions = after.spec_accepted_per_position or ()
    before_positions = before.spec_accepted_per_position
    if before_positions is None and before.spec_drafts_total == 0:
        # llama.cpp writes the family at its first draft: before any, nothing was accepted.
        before_positions = (0.0,) * len(after_positions)
    positions = zip(before_positions or (), after_positions, strict=False)
    per_position = [counter_delta(b, a) for b, a in positions]
    generated = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    requests = counter_delta(before.num_requests_total, after.num_requests_total)
    steps = tokens_per_step = None
    if generated is not None and requests is not None:
        decode_tokens = generated.value - requests.value
        steps = decode_tokens - accepted.value
        tokens_per_step = decode_tokens / steps if steps > 0 else None
    return DraftAcceptance(
        drafts=drafts.value,
        accept_length=1 + accepted.value / drafts.value,
        rate=accepted.value / proposed.value if proposed and proposed.value > 0 else None,
        per_position=tuple(d.value / drafts.value for d in per_position if d is not None),
        steps=steps,
        tokens_per_step=tokens_per_step,
    )


def ran_alone(before: ServerMetrics, after: ServerMetrics, tokens: int) -> bool:
    """Whether a probe of `tokens` tokens was all the server did between two scrapes.

    The generation counter grew by exactly the probe's tokens and, where the server counts
    requests (vLLM), by one finished request; otherwise the deltas mix in other traffic.
    """
    generated = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    if generated is None or generated.value != tokens:
        return False
    if before.num_requests_total is None:
        return True
    finished = counter_delta(before.num_requests_total, after.num_requests_total)
    return finished is not None and finished.value == 1


def exclusive_accept_length(
    before: ServerMetrics, after: ServerMetrics, tokens: int
) -> float | None:
    """The server's `1 + Δaccepted/Δdrafts` over one probe of `tokens` tokens, if it ran alone."""
    if not ran_alone(before, after, tokens):
        return None
    acceptance = draft_acceptance(before, after)
    return None if acceptance is None else acceptance.accept_length


def exclusive_steps(before: ServerMetrics, after: ServerMetrics, tokens: int) -> int | None:
    """vLLM's own count of a probe's steps, if it ran alone: Δ`inter_token_latency_seconds`
    observations, one per engine step and request after the first token."""
    if not ran_alone(before, after, tokens) or before.itl_seconds is None:
        return None
    steps = counter_delta(
        before.itl_seconds.count, after.itl_seconds.count if after.itl_seconds else None
    )
    return int(steps.value) if steps is not None and steps.value > 0 else None
