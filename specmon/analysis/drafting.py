"""What a server that tunes its own speculation is drafting now (docs/metrics.md, "Drafting now").

One definition of each figure, used by the dashboard, the fleet, the exporter and `check`:

- **effective draft length**: draft tokens proposed per step that drafted, over a window;
  None when no step drafted (speculation off at this load);
- **drafting duty cycle**: the share of decode steps that drafted at all.

Where they come from, per backend:

- vLLM and llama.cpp count drafts: Δ`spec_decode_num_draft_tokens` / Δ`spec_decode_num_drafts`
  (vLLM `v1/spec_decode/metrics.py`: one draft per request and step that scheduled drafts, the
  tokens proposed in it). A step its Dynamic SD schedule sends to K = 0 moves neither counter
  (vLLM PR #54748), so the duty cycle needs the decode steps from elsewhere: Δ
  `inter_token_latency_seconds` observations (one per engine step and request after the first
  token), else Δgeneration − Δrequests − Δaccepted. llama.cpp counts neither: no duty cycle.
- SGLang publishes the last decode batch's setting (`sglang:spec_num_draft_tokens`, with
  `sglang:spec_num_steps`, PR #25940; `_active_spec_config_snapshot` in
  `scheduler_metrics_mixin.py`; drafts + 1, so 1 at 0 steps), refreshed every
  `decode_log_interval` batches; each interval
  between two scrapes counts its decode passes (Δ`cuda_graph_passes_total{mode=decode_*}`) at
  the setting the second scrape shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from specmon.analysis.rates import counter_delta
from specmon.model import ServerMetrics

OFF_SHARE = 0.5
"""Below this duty cycle a window counts as "speculation off" (`draft_level`): most of its steps
drafted nothing."""


@dataclass(frozen=True, slots=True)
class DraftSteps:
    """The decode steps between two scrapes, and how many drafted."""

    steps: float | None
    """Decode steps (per request from counters, per batch from SGLang's gauges); None when the
    server does not count them (llama.cpp)."""
    drafted: float
    """Steps that drafted."""
    draft_tokens: float
    """Draft tokens they proposed."""
    source: str
    """"counters" (vLLM, llama.cpp) or "gauges" (SGLang)."""


def draft_steps(before: ServerMetrics, after: ServerMetrics) -> DraftSteps | None:
    """What drafted between two scrapes; None without decoding in between, or without
    speculation (no draft counter, SGLang's gauges at 0 draft tokens)."""
    if after.spec_drafts_total is not None:
        return _from_counters(before, after)
    if not after.spec_num_draft_tokens:
        return None  # no gauge, or 0: no draft worker (speculation off)
    # SGLang creates a counter at its first observation: absent before, it counted from 0.
    start = before.decode_passes_total
    passes = counter_delta(0.0 if start is None else start, after.decode_passes_total)
    if passes is None or passes.value <= 0:
        return None
    # Draft tokens count the root: 1 is a batch at 0 steps. Not `spec_num_steps` > 0: NGRAM
    # reports steps 0 while it drafts (the real 0.5.17 capture: steps 0, draft tokens 4).
    drafts = after.spec_num_draft_tokens - 1
    drafting = drafts > 0
    return DraftSteps(
        steps=passes.value,
        drafted=passes.value if drafting else 0.0,
        draft_tokens=passes.value * drafts if drafting else 0.0,
        source="gauges",
    )


def _from_counters(before: ServerMetrics, after: ServerMetrics) -> DraftSteps | None:
    drafts = counter_delta(before.spec_drafts_total, after.spec_drafts_total)
    tokens = counter_delta(before.spec_draft_tokens_total, after.spec_draft_tokens_total)
    if drafts is None or tokens is None:
        return None
    steps = _decode_steps(before, after)
    if drafts.value <= 0 and (steps is None or steps <= 0):
        return None  # nothing decoded in between (or nothing known of it)
    # Steps counted at a request's end can lag the drafts counted at each step.
    return DraftSteps(
        steps=None if steps is None else max(steps, drafts.value),
        drafted=drafts.value,
        draft_tokens=tokens.value,
        source="counters",
    )


def _decode_steps(before: ServerMetrics, after: ServerMetrics) -> float | None:
    """Decode steps per request between two scrapes, best source first."""
    if before.itl_seconds is not None and after.itl_seconds is not None:
        observed = counter_delta(before.itl_seconds.count, after.itl_seconds.count)
        if observed is not None:
            return observed.value
    generated = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    requests = counter_delta(before.num_requests_total, after.num_requests_total)
    accepted = counter_delta(before.spec_accepted_tokens_total, after.spec_accepted_tokens_total)
    if generated is None or requests is None or accepted is None:
        return None
    return generated.value - requests.value - accepted.value


@dataclass(frozen=True, slots=True)
class Drafting:
    """The drafting of a window of scrapes."""

    draft_length: float | None
    """Effective draft length: draft tokens per step that drafted; None when none drafted."""
    duty_cycle: float | None
    """Share of decode steps that drafted; None when the server counts no decode steps."""
    source: str
    """"counters" or "gauges" (`DraftSteps.source`)."""

    @property
    def off(self) -> bool:
        """Speculation is off at this load: most steps drafted nothing (or none did)."""
        if self.duty_cycle is not None:
            return self.duty_cycle < OFF_SHARE
        return self.draft_length is None

    @property
    def per_step(self) -> float:
        """Draft tokens per decode step (the history's points): the draft length while on, 0
        while off."""
        if self.draft_length is None:
            return 0.0
        return self.draft_length * (self.duty_cycle if self.duty_cycle is not None else 1.0)


def drafting(parts: Iterable[DraftSteps]) -> Drafting | None:
    """The drafting over several intervals (summed); None when they hold no decode step."""
    parts = list(parts)
    if not parts:
        return None
    drafted = sum(p.drafted for p in parts)
    tokens = sum(p.draft_tokens for p in parts)
    counted = [p.steps for p in parts if p.steps is not None]
    steps = sum(counted) if len(counted) == len(parts) else None
    if steps is not None and steps <= 0:
        return None
    length = tokens / drafted if drafted > 0 else None
    return Drafting(
        # Not a number (a server's gauge of 1e308 multiplied past a float): unknown, as "—".
        draft_length=length if length is not None and math.isfinite(length) else None,
        duty_cycle=min(1.0, drafted / steps) if steps is not None else None,
        source=parts[-1].source,
    )


def drafts_otherwise(off: bool, draft_length: float | None, configured: int | None) -> bool:
    """Not drafting the launch flags' k now: off, or another length (an adaptive server at
    this load)."""
    return off or draft_length is None or round(draft_length) != configured


def adapts(off: bool, draft_length: float | None, configured: int | None, switches: int) -> bool:
    """Drafts otherwise than its launch flags now (`drafts_otherwise`), or switched its drafting
    setting since it was first seen: the advisor then names the server's adaptive setting, not
    its flags (the dashboard's drafting line and `w` screen, `check`'s advice)."""
    return switches > 0 or drafts_otherwise(off, draft_length, configured)


def draft_level(figures: Drafting) -> int:
    """The setting a window ran at, for telling switches: 0 when speculation was off, else the
    effective draft length rounded."""
    if figures.off or figures.draft_length is None:
        return 0
    return round(figures.draft_length)
