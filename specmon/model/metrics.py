"""A server's /metrics scrape: histograms, workers behind a router, the figures summed over them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Histogram:
    """A Prometheus histogram summed over its series: cumulative bucket counts by upper bound."""

    buckets: tuple[tuple[float, float], ...]
    """(le, cumulative count), ascending, ending with +Inf."""
    sum: float
    count: float


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """One worker behind a router (`--metrics-url`) at one scrape of them all."""

    url: str
    error: str | None = None
    """Why it could not be read at this scrape; None: it was, and its figures are in the sums."""
    down_since: float | None = None
    """Wall time (unix seconds) of its first failed scrape in the current run of failures."""
    reset: bool = False
    """A counter of it went down since its last scrape: it restarted (its deltas count from 0)."""

    @property
    def up(self) -> bool:
        """Read at this scrape: its figures are in the sums."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    """The figures specmon reads from one `/metrics` scrape, aggregated over ranks.

    Every field is None when its family is absent (unknown, not zero).
    """

    generation_tokens_total: float | None = None
    prompt_tokens_total: float | None = None
    num_requests_total: float | None = None
    spec_verify_calls_total: float | None = None
    realtime_decode_tokens_total: float | None = None
    """`realtime_tokens_total{mode="decode"}` (0.5.7+), counted every decode step."""
    decode_passes_total: float | None = None
    """`cuda_graph_passes_total{mode=~"decode_.*"}` (0.5.7+): one per decode step."""
    gen_throughput: float | None = None
    spec_accept_length: float | None = None
    spec_accept_rate: float | None = None
    spec_num_steps: float | None = None
    """SGLang's `spec_num_steps` gauge (its pull request #25940): the last decode batch's active
    steps, which an adaptive server changes at run time (0: that batch drafted nothing)."""
    spec_num_draft_tokens: float | None = None
    """SGLang's `spec_num_draft_tokens` gauge: the last batch's tokens per verify (drafts + 1)."""
    num_running_reqs: float | None = None
    num_queue_reqs: float | None = None
    token_usage: float | None = None
    ttft_seconds: Histogram | None = None
    itl_seconds: Histogram | None = None
    spec_drafts_total: float | None = None
    """`spec_decode_num_drafts_total` (vLLM, llama.cpp): per request, the steps that verified a
    draft (n-gram steps that found no match draft nothing and are not counted)."""
    spec_draft_tokens_total: float | None = None
    """`spec_decode_num_draft_tokens_total`: draft tokens proposed."""
    spec_accepted_tokens_total: float | None = None
    """`spec_decode_num_accepted_tokens_total`: draft tokens accepted (bonus tokens excluded)."""
    spec_accepted_per_position: tuple[float, ...] | None = None
    """`spec_decode_num_accepted_tokens_per_pos_total`, by draft position 0, 1, …"""
    decode_seconds_total: float | None = None
    """llama.cpp `tokens_predicted_seconds_total`: per request, first token to last, summed."""
    process_start_time: float | None = None
    """`process_start_time_seconds` (unix seconds; vLLM serves it, SGLang does not)."""
    families: frozenset[str] = field(default_factory=frozenset)
    """Short names of every family seen (prefix stripped), for diagnostics."""
    workers: tuple[WorkerStatus, ...] = ()
    """Behind a router (`--metrics-url`): every worker, its figures summed into these
    (`analysis.worker_sums`); empty for one server read directly."""

    @property
    def down_workers(self) -> tuple[WorkerStatus, ...]:
        """The workers left out of these figures (partial sums when any)."""
        return tuple(w for w in self.workers if not w.up)
