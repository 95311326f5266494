"""A probe run: its chunks, conditions, result and figures; where each figure came from."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from specmon.model.metrics import ServerMetrics


class StepsSource(StrEnum):
    """Where a probe's count of verify steps came from."""

    SPEC_VERIFY_CT = "spec_verify_ct"
    """SGLang's final `meta_info.spec_verify_ct`: every step, the prefill one included."""
    CHUNKS = "chunks"
    """vLLM: the chunks after the first (one per step until the client falls behind)."""
    COUNTERS = "counters"
    """vLLM's own count over a probe that ran alone (Δ`inter_token_latency_seconds_count`)."""
    TIMINGS = "timings"
    """llama.cpp's `timings`: `predicted_n − 1 − draft_n_accepted`."""


class PositionSource(StrEnum):
    """Where a run's acceptance by draft position came from."""

    HISTOGRAM = "histogram"
    """Per-request details: SGLang's final `meta_info.spec_correct_drafts_histogram` (0.5.12+;
    0.5.9–0.5.11 `spec_accept_histogram`): every verify step by drafts accepted."""
    DRAFTING_HISTOGRAM = "drafting_histogram"
    """Per-request details: vLLM's `metrics.speculative_decoding.acceptance_histogram` (0.32+,
    `--per-request-spec-decode-metrics`): the steps that drafted, by drafts accepted."""
    COUNTERS = "counters"
    """vLLM's and llama.cpp's `spec_decode_num_accepted_tokens_per_pos` over a probe that ran
    alone, per step that verified a draft."""
    CHUNKS = "chunks"
    """Tokens per verify step as the stream showed them (one chunk per step): older SGLang, or
    vLLM when other requests ran meanwhile."""

    @property
    def per_request(self) -> bool:
        """The server's own account of this one request, whatever else it served meanwhile."""
        return self in (PositionSource.HISTOGRAM, PositionSource.DRAFTING_HISTOGRAM)

    @property
    def per_drafting_step(self) -> bool:
        """Counts only the steps that drafted (vLLM's and llama.cpp's way), not every step."""
        return self in (PositionSource.COUNTERS, PositionSource.DRAFTING_HISTOGRAM)


class AcceptSource(StrEnum):
    """Where a run's server accept length came from."""

    DETAILS = "details"
    """Per-request details: the server's own figure for the request (SGLang's
    `meta_info.spec_accept_length` or completion_tokens / `spec_verify_ct`; vLLM's
    `metrics.speculative_decoding.mean_acceptance_length`)."""
    COUNTERS = "counters"
    """vLLM's and llama.cpp's `1 + Δaccepted/Δdrafts` over a probe that ran alone."""


class CycleBasis(StrEnum):
    """What the cycle percentiles (p50/p95) of a run were computed from."""

    CHUNK_GAPS = "chunk_gaps"
    """Each chunk was one verify step: its gap is one cycle."""
    PER_STEP = "per_step"
    """Chunks carried several steps (SGLang `stream_interval` > 1, coalesced chunks under load,
    vLLM merging steps): each gap divided by the whole number of steps it spans."""


@dataclass(frozen=True, slots=True)
class ProbeChunk:
    """One SSE chunk of a probe stream that carried new tokens."""

    t: float
    """Arrival time in seconds after the request was sent (monotonic clock)."""
    completion_tokens: int
    """Cumulative `meta_info.completion_tokens`."""


@dataclass(frozen=True, slots=True)
class RunConditions:
    """What went on beside one run (a probe, or one stream of a bench run) while it streamed:
    the server's load and whether specmon's own machine kept up (`sources.conditions`).

    Two runs compare like for like only under like conditions: a probe beside other requests
    shares the server's batch, and a client starved of CPU reads its chunks late.
    """

    others_running: int | None = None
    """The most requests the server ran beside specmon's own streams at any `/metrics` reading
    taken while the run streamed (its running gauge minus specmon's streams in flight); None
    when no reading fell inside the run (metrics off, a run too short)."""
    queued: int | None = None
    """The most requests waiting in the server's queue at those readings."""
    load_readings: int = 0
    """How many `/metrics` readings fell inside the run."""
    read_lag_ms: float | None = None
    """Median lateness of specmon's event-loop timer while the run streamed: how late a chunk
    that arrived was typically read; None with too few ticks to tell (a short run)."""
    read_lag_max_ms: float | None = None
    """The worst lateness of that timer during the run."""
    host_cpu_pct: float | None = None
    """specmon's machine's CPU busy share over the run, all CPUs (psutil), 0–100."""
    host_steal_pct: float | None = None
    """The CPU time a hypervisor took from specmon's machine over the run (psutil `steal`,
    Linux), 0–100."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one streaming probe request observed; figures are derived in analysis."""

    sent_at: float
    """Wall-clock time (unix seconds) the request was sent."""
    chunks: tuple[ProbeChunk, ...]
    prompt_tokens: int | None
    verify_ct: int | None
    """Verify steps of the request; None without speculation. SGLang: the final
    `meta_info.spec_verify_ct`; vLLM: the chunks after the first (one per step); llama.cpp:
    `timings.predicted_n − 1 − timings.draft_n_accepted`."""
    server_accept_length: float | None
    """The server's own accept length for the request when it sent one (SGLang's
    `meta_info.spec_accept_length`, vLLM's per-request `mean_acceptance_length`); else vLLM's
    and llama.cpp's figure is derived from `scrapes`."""
    finish_reason: str | None
    steps_source: StepsSource = StepsSource.SPEC_VERIFY_CT
    """Where `verify_ct` came from."""
    chunks_are_steps: bool = True
    """One chunk per verify step (SGLang, vLLM), so chunk gaps are cycle times; llama.cpp sends
    one chunk per token."""
    scrapes: tuple[ServerMetrics, ServerMetrics] | None = None
    """`/metrics` just before and just after the probe (vLLM, llama.cpp: their draft counters
    are the server's own account of the request when nothing else ran meanwhile)."""
    accepted_histogram: tuple[int, ...] | None = None
    """The server's per-request histogram: index j = verify steps that accepted j drafts."""
    histogram_source: PositionSource = PositionSource.HISTOGRAM
    """Which steps `accepted_histogram` counts: every verify step (SGLang) or the drafting ones
    (vLLM, `PositionSource.DRAFTING_HISTOGRAM`)."""
    conditions: RunConditions | None = None
    """The server's load and specmon's machine while it streamed; None when not watched."""


@dataclass(frozen=True, slots=True)
class RunFigures:
    """The numbers of one probe run, exactly as docs/design.md §4 defines them."""

    completion_tokens: int
    prompt_tokens: int | None
    ttft_ms: float
    e2e_s: float
    e2e_tok_s: float | None
    """None when the stream took no measurable time (never 0.0 for an unknown rate)."""
    decode_tok_s: float | None
    accept_length: float | None
    server_accept_length: float | None
    verify_ct: int | None
    cycle_ms: float | None
    cycle_ms_p50: float | None
    cycle_ms_p95: float | None
    cycle_source: StepsSource | None = None
    """Where the verify steps behind accept length and cycle came from (None without
    speculation); llama.cpp's "timings" come with one chunk per token, so no p50/p95."""
    decode_tokens: int | None = None
    """c_last − c_0: the tokens after the first chunk (the numerator of decode tok/s)."""
    decode_s: float | None = None
    """t_last − t_0 in seconds (the denominator of decode tok/s); None when the stream's timing
    is unusable (`buffered`)."""
    decode_steps: float | None = None
    """V_decode: the verify steps after the first token; None without speculation."""
    cycle_basis: CycleBasis | None = None
    """What p50/p95 rest on; None when they are absent (no speculation, one chunk per token,
    or a buffered stream)."""
    buffered: bool = False
    """The stream's chunks arrived together (a buffering proxy, or a client starved of a CPU):
    its timing is not used."""
    position_accept: tuple[float, ...] | None = None
    """a_i: the share of drafting steps whose draft token at position i (0, 1, …) was accepted
    (it needs every earlier one accepted too); None when the run does not tell."""
    position_steps: float | None = None
    """The drafting steps `position_accept` rests on (its weight when runs are pooled)."""
    position_source: PositionSource | None = None
    """Where `position_accept` came from."""
    server_accept_source: AcceptSource | None = None
    """Where `server_accept_length` came from."""
    conditions: RunConditions | None = None
    """The conditions it ran under (`ProbeResult.conditions`); None when unknown (records
    older than conditions, a run nobody watched)."""


@dataclass(frozen=True, slots=True)
class Stats:
    """Run statistics of one figure."""

    median: float
    min: float
    max: float
    mean: float
    stdev: float | None
    """Sample standard deviation; None with a single value."""
