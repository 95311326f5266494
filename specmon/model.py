"""Frozen dataclasses shared by every layer: what sources return and what analysis derives.

Missing data is `None`, never 0: an absent metric family, a server that does not say, a figure
that cannot be computed (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The speculative-decoding configuration a server reports."""

    algorithm: str
    """`speculative_algorithm`, e.g. "EAGLE3", "NGRAM"."""
    num_steps: int | None
    eagle_topk: int | None
    num_draft_tokens: int | None
    draft_model_path: str | None = None

    def describe(self) -> str:
        """One short line, e.g. "EAGLE3 steps=2 topk=1 draft=3"."""
        parts = [self.algorithm]
        for name, value in (
            ("steps", self.num_steps),
            ("topk", self.eagle_topk),
            ("draft", self.num_draft_tokens),
        ):
            if value is not None:
                parts.append(f"{name}={value}")
        return " ".join(parts)


BACKEND_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "llamacpp": "llama.cpp"}


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """One server's identity and configuration, normalised across versions."""

    backend: str
    """"sglang" (vLLM and llama.cpp come later)."""
    version: str | None
    model: str | None
    """The served model name (what `/v1/models` and the metrics' `model_name` say)."""
    tp_size: int | None
    dp_size: int | None
    pp_size: int | None
    speculative: SpecConfig | None
    """None when speculation is off."""
    stream_interval: int | None
    cuda_graph_disabled: bool | None
    cuda_graph_max_bs: int | None
    metrics_enabled: bool | None
    args: Mapping[str, Any]
    """Every server arg the server reported, secrets masked; the basis of fingerprints."""
    last_gen_throughput: float | None = None
    avg_spec_accept_length: float | None = None
    """SGLang's cumulative accept length since start or the last /flush_cache."""
    info_route: str = "/server_info"
    """Which route answered (`/server_info` or the older `/get_server_info`)."""

    @property
    def title(self) -> str:
        """ "SGLang 0.5.23": the backend's display name and version."""
        return f"{BACKEND_NAMES.get(self.backend, self.backend)} {self.version or '?'}"


@dataclass(frozen=True, slots=True)
class Histogram:
    """A Prometheus histogram summed over its series: cumulative bucket counts by upper bound."""

    buckets: tuple[tuple[float, float], ...]
    """(le, cumulative count), ascending, ending with +Inf."""
    sum: float
    count: float


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
    num_running_reqs: float | None = None
    num_queue_reqs: float | None = None
    token_usage: float | None = None
    ttft_seconds: Histogram | None = None
    itl_seconds: Histogram | None = None
    e2e_seconds: Histogram | None = None
    families: frozenset[str] = field(default_factory=frozenset)
    """Short names of every family seen (prefix stripped), for diagnostics."""


@dataclass(frozen=True, slots=True)
class ProbeChunk:
    """One SSE chunk of a probe stream that carried new tokens."""

    t: float
    """Arrival time in seconds after the request was sent (monotonic clock)."""
    completion_tokens: int
    """Cumulative `meta_info.completion_tokens`."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one streaming probe request observed; figures are derived in analysis."""

    sent_at: float
    """Wall-clock time (unix seconds) the request was sent."""
    chunks: tuple[ProbeChunk, ...]
    prompt_tokens: int | None
    verify_ct: int | None
    """Final `meta_info.spec_verify_ct`; None when the server reported none (no speculation)."""
    server_accept_length: float | None
    """Final `meta_info.spec_accept_length` when the server sent it."""
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class RunFigures:
    """The numbers of one probe run, exactly as DESIGN.md §4 defines them."""

    completion_tokens: int
    prompt_tokens: int | None
    ttft_ms: float
    e2e_s: float
    e2e_tok_s: float
    decode_tok_s: float | None
    accept_length: float | None
    server_accept_length: float | None
    verify_ct: int | None
    cycle_ms: float | None
    cycle_ms_p50: float | None
    cycle_ms_p95: float | None


@dataclass(frozen=True, slots=True)
class Stats:
    """Run statistics of one figure."""

    median: float
    min: float
    max: float
    mean: float
    stdev: float | None
    """Sample standard deviation; None with a single value."""


@dataclass(frozen=True, slots=True)
class Protocol:
    """The bench protocol: two snapshots compare only when these agree (DESIGN.md §5)."""

    runs: int
    warmup: int
    max_tokens: int
    temperature: float
    prompt: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A completed bench: its runs, the protocol and the server it ran against."""

    created_at: float
    """Unix seconds."""
    url: str
    label: str | None
    server: ServerInfo
    protocol: Protocol
    runs: tuple[RunFigures, ...]
    id: int | None = None
    """Assigned by the store."""
