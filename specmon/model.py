"""Frozen dataclasses shared by every layer: what sources return and what analysis derives.

Missing data is `None`, never 0: an absent metric family, a server that does not say, a figure
that cannot be computed (docs/design.md §4).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from specmon.backend_facts import display_name


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The speculative-decoding configuration a server reports."""

    algorithm: str
    """`speculative_algorithm`, e.g. "EAGLE3", "NGRAM"; vLLM's `method` ("unknown" where it is
    not exposed: `UNKNOWN_METHOD`)."""
    num_steps: int | None
    eagle_topk: int | None
    num_draft_tokens: int | None
    draft_model_path: str | None = None
    length_name: str | None = None
    """The server's own name for the draft length held in `num_steps`
    (`BackendFacts.length_name`: vLLM's `num_speculative_tokens`); None: SGLang's steps, topk and
    draft tokens."""

    def describe(self) -> str:
        """One short line, e.g. "EAGLE3 steps=2 topk=1 draft=3", or in the server's own words
        "eagle3 num_speculative_tokens=3"."""
        if self.length_name is not None:
            method = self.algorithm
            if method == UNKNOWN_METHOD:
                method = "method not exposed,"
            length = f" {self.length_name}={self.num_steps}" if self.num_steps is not None else ""
            return f"{method}{length}".rstrip(",")
        parts = [self.algorithm]
        for name, value in (
            ("steps", self.num_steps),
            ("topk", self.eagle_topk),
            ("draft", self.num_draft_tokens),
        ):
            if value is not None:
                parts.append(f"{name}={value}")
        return " ".join(parts)

    def brief(self) -> str:
        """The fleet table's few cells: "EAGLE3 2/1/3" (steps/topk/draft) when all three are
        known, else the known ones by letter, e.g. "NGRAM d4" (SGLang's n-gram drafting reads
        only the draft size; its steps and topk are placeholders); a server naming its draft
        length otherwise, its method and k, e.g. "eagle3 k=3" ("? k=3": method not exposed)."""
        if self.length_name is not None:
            method = "?" if self.algorithm == UNKNOWN_METHOD else self.algorithm
            return method + (f" k={self.num_steps}" if self.num_steps is not None else "")
        values = (self.num_steps, self.eagle_topk, self.num_draft_tokens)
        if self.algorithm.upper() == "NGRAM" and self.num_draft_tokens is not None:
            values = (None, None, self.num_draft_tokens)
        if all(v is not None for v in values):
            return f"{self.algorithm} {'/'.join(str(v) for v in values)}"
        known = [f"{k}{v}" for k, v in zip("skd", values, strict=True) if v is not None]
        return " ".join([self.algorithm, *known])


UNKNOWN_METHOD = "unknown"
"""vLLM's speculative method where it does not say it (outside its dev mode)."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """One server's identity and configuration, normalised across versions."""

    backend: str
    """"sglang", "vllm" … (keys of `backend_facts.FACTS`)."""
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
        """ "SGLang 0.5.23": the backend's display name and version (`server_title`)."""
        return server_title(self.backend, self.version)


def server_title(backend: str, version: str | None) -> str:
    """ "SGLang 0.5.23": a backend's display name and version."""
    return f"{display_name(backend)} {version or '?'}"


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


class SourceName(StrEnum):
    """The sampler's sources: the keys of `Sample.readings`."""

    INFO = "info"
    METRICS = "metrics"
    GPU = "gpu"


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


@dataclass(frozen=True, slots=True)
class Protocol:
    """The bench protocol: two snapshots compare only when these agree (docs/design.md §5)."""

    runs: int
    warmup: int
    max_tokens: int
    temperature: float
    prompt: str
    concurrency: int = 1
    """Requests in flight at once: each timed run is this many concurrent streams (`ab`)."""


GpuSourceKind = Literal["nvml", "dcgm"]
"""Where GPU readings come from: NVML on this machine, or a DCGM-style `/metrics` endpoint
(dcgm-exporter, or `specmon agent` on the GPU box)."""

CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "idle"),
    (0x2, "app_clocks"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
"""NVML's clock event ("throttle") reason bits and their short names. DCGM exports the same mask
as `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` (`…_CLOCK_THROTTLE_REASONS` before DCGM 3.3)."""
_KNOWN_REASONS = sum(bit for bit, _ in CLOCK_EVENT_REASONS)


@functools.lru_cache(maxsize=256)  # a handful of masks occur; a fleet asks thousands of times
def clock_event_names(mask: int) -> tuple[str, ...]:
    """The short names of a clock event reasons mask, unknown bits in hex."""
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    if mask & ~_KNOWN_REASONS:
        names.append(f"0x{mask & ~_KNOWN_REASONS:x}")
    return tuple(names)


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding a GPU context."""

    pid: int
    """As the driver reports it (a host pid: in a container it may not be one psutil sees)."""
    used_memory_mib: float | None
    name: str | None = None
    """From psutil, when the process is visible from here."""
    sm_util_pct: float | None = None
    """Its share of SM time in NVML's last sampling window; None when NVML has no sample."""
    is_server: bool | None = None
    """Whether it belongs to the monitored server's process tree; None when that is unknown."""


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One GPU at one moment. Every field the driver or exporter did not give is None."""

    index: int
    name: str | None = None
    uuid: str | None = None
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    """The enforced power limit."""
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    temperature_c: float | None = None
    clock_event_mask: int | None = None
    """NVML's clock event reasons bitmask (see `CLOCK_EVENT_REASONS`)."""
    processes: tuple[GpuProcess, ...] | None = None
    """None when the source does not list processes (dcgm-exporter does not)."""
    error: str | None = None
    """Why this GPU could not be read (e.g. "GPU is lost"); its other fields are then None."""

    @property
    def throttle_reasons(self) -> tuple[str, ...] | None:
        """The clock event reasons by short name ("idle", "sw_power_cap" …); None if unknown."""
        mask = self.clock_event_mask
        return None if mask is None else clock_event_names(mask)


@dataclass(frozen=True, slots=True)
class HostStats:
    """The machine the server runs on."""

    cpu_percent: float | None
    """All CPUs together, 0–100; None on the first reading (psutil needs two)."""
    cpu_count: int | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None


@dataclass(frozen=True, slots=True)
class ProcessStats:
    """The server's process (the one listening on its port)."""

    pid: int
    name: str | None
    start_time: float | None
    """Unix seconds; a new value means the server restarted."""
    cpu_percent: float | None
    """Percent of one CPU (can exceed 100); None on the first reading of this process."""
    rss_bytes: int | None
    port: int | None = None


@dataclass(frozen=True, slots=True)
class Telemetry:
    """One reading of the GPUs, the host and the server process, from one source."""

    kind: GpuSourceKind
    source: str
    """Where it came from, e.g. "NVML on this machine", "specmon agent at http://…/metrics"."""
    gpus: tuple[GpuDevice, ...] = ()
    unavailable: str | None = None
    """Why there are no GPU readings, one line (e.g. "no NVML here (Driver Not Loaded)")."""
    hint: str | None = None
    """How to get GPU readings when they are unavailable."""
    hostname: str | None = None
    driver_version: str | None = None
    host: HostStats | None = None
    server_process: ProcessStats | None = None
    server_process_missing: str | None = None
    """Why `server_process` is None, when it was looked for."""


@dataclass(frozen=True, slots=True)
class GpuState:
    """The GPUs' condition during a bench, kept with its snapshot (`analysis.gpus.gpu_state`).

    Two snapshots taken under different GPU conditions (lower clocks, another power limit,
    throttling, someone else's process on a GPU) do not compare like for like.
    """

    source: str
    gpu_count: int
    gpu_name: str | None = None
    """Short model name(s), e.g. "H200", or "H200, H100" on a mixed box."""
    sm_clock_mhz: float | None = None
    """Median over the samples of the lowest SM clock among the busy (not idle) GPUs."""
    sm_clock_max_mhz: float | None = None
    power_limit_w: float | None = None
    """The lowest enforced power limit."""
    max_temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    """Throttling reasons seen on any GPU in any sample (idle and the like excluded)."""
    other_processes: tuple[str, ...] = ()
    """Processes on the GPUs that are not the server's, e.g.
    "python (pid 4242) on GPU 3: 20480 MiB, SM 35%"."""
    samples: int = 0


@dataclass(frozen=True, slots=True)
class Lifetime:
    """What identifies one launch of a server, recorded when a snapshot is taken.

    A later reading of the same server is compared with it (`analysis.validity.lifetime_check`)
    to tell whether the server restarted since.
    """

    launch: str
    """A hash of every server arg the server reported (secrets masked): SGLang draws a fresh
    `random_seed` and sizes `max_total_num_tokens` at every start, so a relaunch with the same
    flags usually changes it."""
    started_at: float | None = None
    """The server process's start (unix seconds): `process_start_time_seconds` from /metrics
    (vLLM), or psutil when the server runs on this machine."""
    counters: tuple[tuple[str, float], ...] = ()
    """Cumulative counters at the end of the bench (name, value): a value that went down later
    means a restart."""


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
    gpu: GpuState | None = None
    """The GPU state during the runs, when it could be read."""
    lifetime: Lifetime | None = None
    """The server's launch markers at the end of the bench (None in older records)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """The latest state of one source."""

    value: Any
    """The last successful result (None until the first)."""
    at: float | None
    """Monotonic time the value was read."""
    seq: int
    """How many successful reads so far: a new value is one whose seq changed."""
    error: str | None = None
    """The last failure since the last success, if any."""
    error_at: float | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """Everything known at one tick."""

    t: float
    """Monotonic time of the tick."""
    wall: float
    readings: Mapping[str, Reading]

    def value(self, name: str) -> Any:
        """The latest value of a source, or None."""
        reading = self.readings.get(name)
        return None if reading is None else reading.value

    @property
    def info(self) -> ServerInfo | None:
        """The latest server info."""
        value = self.value(SourceName.INFO)
        return value if isinstance(value, ServerInfo) else None

    @property
    def metrics(self) -> ServerMetrics | None:
        """The latest /metrics scrape."""
        value = self.value(SourceName.METRICS)
        return value if isinstance(value, ServerMetrics) else None

    @property
    def telemetry(self) -> Telemetry | None:
        """The latest GPU/host reading."""
        value = self.value(SourceName.GPU)
        return value if isinstance(value, Telemetry) else None

    def error(self, name: str) -> str | None:
        """A source's last error since its last success, or None."""
        reading = self.readings.get(name)
        return None if reading is None else reading.error

    def age(self, name: str) -> float | None:
        """Seconds since the source last succeeded (None if it never did)."""
        reading = self.readings.get(name)
        return None if reading is None or reading.at is None else self.t - reading.at
