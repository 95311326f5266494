"""Acceptance by draft position (a_i) and the tokens per step it predicts at other draft lengths.

a_i is the share of drafting steps whose draft token at position i was accepted; a token is
accepted only if every earlier one was, so a_0 ≥ a_1 ≥ … Every source states it the same way:

- A per-request histogram h_j (steps that accepted j drafts: SGLang's over every verify step,
  vLLM's `--per-request-spec-decode-metrics` over the drafting ones): a_i = Σ_{j>i} h_j / Σ h.
- vLLM's and llama.cpp's `spec_decode_num_accepted_tokens_per_pos` counters:
  a_i = Δaccepted_i / Δdrafts (`analysis.rates.draft_acceptance`).
- A stream with one chunk per verify step: each chunk after the first adds 1 + j tokens
  (j accepted drafts), so the chunks are a histogram of j.

The expected tokens per step at draft length k (vLLM's dynamic speculation) is
AL(k) = 1 + Σ_{i<k} a_i (`tokens_per_step`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from specmon.backend_facts import find
from specmon.model import PositionSource, ProbeChunk, RunFigures, ServerInfo


@dataclass(frozen=True, slots=True)
class PositionAcceptance:
    """a_i by draft position over some drafting steps, and where it came from."""

    rates: tuple[float, ...]
    """a_0, a_1, …: one per draft position the server drafted."""
    steps: float
    """Drafting steps behind the rates."""
    source: PositionSource


def from_histogram(
    histogram: Sequence[int], source: PositionSource = PositionSource.HISTOGRAM
) -> PositionAcceptance | None:
    """a_i from a histogram of drafts accepted per step (index j = steps that accepted j).

    The histogram has one entry per possible count, 0 … k, so k positions; None when empty.
    `source` says which steps it counts (`ProbeResult.histogram_source`).
    """
    total = sum(histogram)
    if total <= 0 or len(histogram) < 2:
        return None
    rates = tuple(sum(histogram[i + 1 :]) / total for i in range(len(histogram) - 1))
    return PositionAcceptance(rates, float(total), source)


def from_chunks(chunks: Sequence[ProbeChunk], draft_length: int) -> PositionAcceptance | None:
    """a_i from a stream whose chunks after the first are one verify step each.

    Args:
        chunks: The stream's chunks (cumulative token counts).
        draft_length: k, drafts per step (positions beyond what a chunk shows count as 0).
    """
    if draft_length < 1:
        return None
    histogram = [0] * (draft_length + 1)
    for a, b in itertools.pairwise(chunks):
        accepted = b.completion_tokens - a.completion_tokens - 1
        if not 0 <= accepted <= draft_length:
            return None  # a chunk that holds several steps: not one step per chunk
        histogram[accepted] += 1
    found = from_histogram(histogram)
    return (
        None
        if found is None
        else PositionAcceptance(found.rates, found.steps, PositionSource.CHUNKS)
    )


def from_counters(rates: Sequence[float], drafts: float) -> PositionAcceptance | None:
    """a_i from the per-position counters' deltas over `drafts` drafting steps."""
    if not rates or drafts <= 0:
        return None
    return PositionAcceptance(tuple(rates), drafts, PositionSource.COUNTERS)


def pooled_positions(runs: Sequence[RunFigures]) -> PositionAcceptance | None:
    """a_i over a set of runs: each run's rates weighted by its drafting steps.

    Runs whose rates cover fewer positions (a histogram cut short) pool over the positions all
    of them have; the source is the runs' when they agree, else the first run's.
    """
    have = [r for r in runs if r.position_accept and r.position_steps]
    if not have:
        return None
    width = min(len(r.position_accept or ()) for r in have)
    steps = sum(r.position_steps or 0.0 for r in have)
    rates = tuple(
        sum((r.position_accept or ())[i] * (r.position_steps or 0.0) for r in have) / steps
        for i in range(width)
    )
    source = have[0].position_source or PositionSource.CHUNKS
    return PositionAcceptance(rates, steps, source)


def tokens_per_step(rates: Sequence[float], k: int) -> float:
    """AL(k) = 1 + Σ_{i<k} a_i: expected tokens per drafting step with k drafts.

    Raises:
        ValueError: k beyond the positions known (extrapolate with `extended_rates`).
    """
    if k > len(rates):
        raise ValueError(f"acceptance known for {len(rates)} positions, not {k}")
    return 1 + sum(rates[:k])


def extended_rates(rates: Sequence[float], k: int) -> tuple[float, ...]:
    """a_i up to position k − 1, continuing past the known ones geometrically.

    Assumption: past the last known position, each further draft is accepted, given the one
    before it was, as often as the last known position was given its predecessor
    (r = a_{K−1} / a_{K−2}; with a single known position, r = a_0).
    """
    known = tuple(rates)
    if k <= len(known) or not known:
        return known[:k]
    last = known[-1]
    ratio = last / known[-2] if len(known) >= 2 and known[-2] > 0 else last
    ratio = min(max(ratio, 0.0), 1.0)
    more = tuple(last * ratio ** (n + 1) for n in range(k - len(known)))
    return known + more


def draft_length(info: ServerInfo) -> int | None:
    """k, the drafts per step a server is configured for; None when it does not say.

    Where the backend's draft tokens count the root token too (`BackendFacts.counts_root`:
    SGLang's `speculative_num_draft_tokens`, which EAGLE with topk 1 resolves to steps + 1),
    k = value − 1; elsewhere (vLLM's `num_speculative_tokens`, llama.cpp's `--spec-draft-n-max`)
    k is `SpecConfig.num_steps`.
    """
    spec = info.speculative
    if spec is None:
        return None
    kind = find(info.backend)  # a record's backend may not be installed here: its num_steps
    if kind is not None and kind.counts_root and spec.num_draft_tokens is not None:
        return spec.num_draft_tokens - 1
    return spec.num_steps


def impossible_accept_length(value: float | None, k: int | None) -> str | None:
    """Why an accept length cannot be true, or None when it can (or nothing bounds it).

    A verify step yields at most its k drafts plus the bonus token, so tokens per step is at
    most k + 1 (k the configured draft length, `draft_length`: an adaptive server drafts at
    most that). Above it, steps went uncounted: an adaptive server that stops drafting at high
    load and does not count its verify steps while off read 8.69 (probe) and 31.4 (server) at
    k = 3. Such a figure is withheld with this sentence, never clamped to k + 1 (a clamped 4.00
    would read as every draft accepted).
    """
    if value is None or k is None or k < 0:
        return None
    bound = k + 1
    if value <= bound * (1 + 1e-9):
        return None
    return (
        f"{value:.2f} cannot be: at most k + 1 = {bound} tokens per verify step "
        "(steps went uncounted, as while an adaptive server drafts nothing)"
    )
