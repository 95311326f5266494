"""What the dashboard shows: one frozen View per tick, built by `LiveState.view()`.

Widgets render these values and nothing else. Every figure that can be missing is None, and
`missing` says why, so the UI can show "—" with the reason one key away.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specmon.analysis.acceptance import PositionAcceptance
from specmon.analysis.comparison import Comparison, Verdict
from specmon.analysis.drafting import adapts, drafts_otherwise
from specmon.analysis.representative import TrafficGap
from specmon.analysis.validity import Validity, ValidityState
from specmon.model import WorkerStatus
from specmon.wording import DASH

RECENT_PROBES = 5
"""The probe runs pooled into "now" (the panels', the fleet table's, the exporter's)."""

Level = Literal["info", "warn", "error"]
StateName = Literal["live", "stale", "down", "connecting"]


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the events log."""

    wall: float
    level: Level
    text: str


@dataclass(frozen=True, slots=True)
class IdentityView:
    """The top line: which server, what it runs, whether we are seeing it live."""

    url: str
    title: str | None
    """"SGLang 0.5.23"."""
    model: str | None
    tp_size: int | None
    speculation: str
    """"EAGLE3 steps=2 topk=1 draft=3" or "no speculation" (or "unknown" before server info)."""
    up_for_s: float | None
    """The server's uptime when its process start is known, else how long specmon has seen
    this lifetime (`uptime_known` says which)."""
    uptime_known: bool
    state: StateName
    state_detail: str
    speculation_brief: str = DASH
    """`speculation` in a table cell: "EAGLE3 2/1/3", "NGRAM d4", "no spec" ("—" before server
    info)."""
    replay: bool = False
    """The state is a recording's, at the replayed time (`specmon replay`), not the server's now."""


@dataclass(frozen=True, slots=True)
class DecodeView:
    """The headline: probe decode speed."""

    decode_tok_s: float | None
    """The latest probe's (the Decode panel's headline)."""
    ms_per_token: float | None
    ttft_ms: float | None
    probe_age_s: float | None
    history: tuple[float, ...]
    """Server-side decode tok/s of the last 5 minutes, one mean per completed 5 s step."""
    history_source: str | None
    probe_state: str
    """"every 10 s", "paused", "off", "failing: …"."""
    history_points: int = 60
    """How many points a full `history` holds (each point then keeps its width)."""
    history_span: str = "5 min"
    """What `history` spans: the live 5 minutes, or a zoom's (`z`: "1 h", "24 h", "all")."""
    history_marks: tuple[int, ...] = ()
    """Points of `history` where the server restarted or changed config, counted from the
    newest (0)."""
    recent_tok_s: float | None = None
    """The recent probes' pooled decode tok/s (`LiveState.recent`): the window of the accept
    length, cycle and speedup beside it (the fleet row's, the exporter's)."""
    recent_runs: int = 0
    """How many probes `recent_tok_s` pools (at most `RECENT_PROBES`)."""


@dataclass(frozen=True, slots=True)
class DraftingView:
    """What the server drafts now, beside what it was launched with (`analysis.drafting`)."""

    configured: int | None
    """k, the draft length of the launch flags (`analysis.acceptance.draft_length`)."""
    draft_length: float | None
    """Effective draft length over `span_s`: draft tokens per step that drafted (None: none)."""
    duty_cycle: float | None
    """Share of decode steps that drafted over `span_s`; None where the server counts no decode
    steps (llama.cpp)."""
    off: bool
    """Speculation off at this load (`Drafting.off`)."""
    source: str
    """"counters" (vLLM, llama.cpp) or "gauges" (SGLang's last-batch setting)."""
    history: tuple[float, ...]
    """Draft tokens per decode step, one point per history step of the last 5 minutes."""
    history_points: int
    switches: int
    """Switches of the drafting setting seen in this lifetime (each one is an event)."""
    span_s: float

    @property
    def differs(self) -> bool:
        """It does not draft its launch flags' k now: off, or another length (an adaptive
        server at this load)."""
        return drafts_otherwise(self.off, self.draft_length, self.configured)

    @property
    def adaptive(self) -> bool:
        """It drafts otherwise than its flags now, or did in this lifetime: worth a line."""
        return adapts(self.off, self.draft_length, self.configured, self.switches)


@dataclass(frozen=True, slots=True)
class CategoryView:
    """One probe category's recent probes, pooled (`analysis.pooled.pool_groups`)."""

    category: str
    accept_length: float | None
    decode_tok_s: float | None
    runs: int
    comparison: Comparison | None = None
    """Against a baseline of this category (its prompt) that applies (`CategoryBaselines`)."""
    why_no_speedup: str | None = None
    """Why `comparison` is None: no baseline of this category, or one that does not apply."""


@dataclass(frozen=True, slots=True)
class SpecView:
    """Acceptance and cycle time of the recent probes (pooled, analysis/pooled.py)."""

    enabled: bool | None
    accept_length: float | None
    """Σ tokens / Σ verify steps of the recent probes."""
    server_accept_length: float | None
    server_accept_source: str | None
    accept_rate: float | None
    cycle_ms_p50: float | None
    cycle_ms_p95: float | None
    """Percentiles of every verify step's cycle over the recent probes, pooled
    (`pooled_cycle_percentiles`); None with the reason in `cycle_note` when chunks are not steps
    (llama.cpp) or the stream arrived buffered."""
    cycle_ms: float | None
    """Σ decode seconds / Σ verify steps of the recent probes."""
    cycle_note: str | None
    """Why p50/p95 are missing, or what they rest on when chunks carried several steps."""
    break_even: float | None
    margin: float | None
    """Accept length − break-even, against a baseline that applies (same runs as the
    speedup: same sign)."""
    verdict: Verdict | None
    """The comparison's verdict (it reads the speedup's interval, which the margin has not)."""
    tokens_per_cycle: tuple[int, ...]
    """Counts of verify steps by tokens they produced (index 0 = 1 token), last probe."""
    accept_history: tuple[float, ...] = ()
    """Accept length of each probe of the last 5 minutes, oldest first."""
    positions: PositionAcceptance | None = None
    """Acceptance by draft position over the recent probes (`analysis.acceptance`)."""
    accept_history_points: int = 30
    """How many probes a full `accept_history` holds (one per probe interval)."""
    drafting: DraftingView | None = None
    """What the server drafts now; None before its scrapes show a decode step with speculation
    configured."""
    accept_history_span: str = "5 min"
    """What `accept_history` spans (`DecodeView.history_span`)."""
    categories: tuple[CategoryView, ...] = ()
    """Per probe category, when the probe rotates several (`--probe-prompts`)."""
    traffic_gap: TrafficGap | None = None
    """The probe's accept length beside the traffic's (`server_accept_length`, counted)."""


@dataclass(frozen=True, slots=True)
class BenchView:
    """A bench in progress (`b` or `s`)."""

    kind: Literal["baseline", "snapshot"]
    done: int
    total: int
    eta_s: float | None


@dataclass(frozen=True, slots=True)
class BaselineView:
    """The current baseline and the comparison against it."""

    present: bool
    snapshot_id: int | None
    url: str | None
    tok_s: float | None
    """Pooled decode tok/s of the baseline's runs."""
    tok_s_min: float | None
    tok_s_max: float | None
    runs: int
    age_s: float | None
    origin: str | None
    """"the baseline server", "this server, speculation off", "from the store"."""
    current_tok_s: float | None
    """Pooled decode tok/s of the recent probes: the other side of the comparison."""
    current_runs: int
    """How many recent probes `current_tok_s` pools (the Decode panel shows the last alone)."""
    comparison: Comparison | None
    """Speedup (now / base − 1 of the two figures above), verdict, break-even; None on a server
    without speculation (the baseline's configuration is its own: no speedup to measure)."""
    validity: Validity | None
    """None until the server's info is known."""
    progress: BenchView | None
    """A baseline being taken."""
    waiting: bool
    """Watching for the server to come back without speculation to take the baseline."""
    why_none: str | None = None
    """Without a baseline: why the store has none that applies, naming the nearest ("no
    baseline applies: #1 (…) was taken with max_tokens 500, the probe uses 256")."""
    chosen_by: str | None = None
    """Which rule picked the baseline and what else was considered ("latest valid of the
    configuration and protocol; 3 considered; next: #4 … is older than #7"), or where one taken
    now came from: the `i` screen."""
    speculative_flags: str = "--speculative-*"
    """The watched server's speculative launch flags as its backend names them (what a restart
    for the baseline leaves out: vLLM's "--speculative-config")."""

    @property
    def applies(self) -> bool:
        """The comparison counts: there is one, against a baseline that applies (as far as is
        known: an unverified one does; a stale one's speedup is shown greyed, never used)."""
        return self.comparison is not None and self.validity is not None and self.validity.valid

    @property
    def states(self) -> tuple[tuple[str, bool], ...]:
        """(state, whether the baseline is in it) for every `ValidityState`, as the exporter's
        `specmon_baseline_state` serves them; none until the server's info is known."""
        if self.validity is None:
            return ()
        now = self.validity.state
        return tuple((state.value, state == now) for state in ValidityState)


@dataclass(frozen=True, slots=True)
class ServerView:
    """Server-side figures from /metrics."""

    running: float | None
    """The running-requests gauge as served (see `running_stale`)."""
    queued: float | None
    kv_usage: float | None
    decode_tok_s: float | None
    """The server's generation throughput over `rate_span_s`, all requests, idle time included
    (not the probe's decode speed)."""
    decode_source: str | None
    ttft_ms: float | None
    itl_ms: float | None
    metrics_state: str
    """"ok", "off (--enable-metrics)", "failing: …", or behind a router "partial: …" naming the
    workers left out of the sums (`wording.partial_sums`)."""
    idle: bool = False
    """No token was generated over `rate_span_s` (a token counter did not move)."""
    running_stale: bool = False
    """Idle, yet the running gauge reads above 0: SGLang refreshes it only while it decodes, so
    it keeps the last batch's count."""
    rate_span_s: float = 10.0
    latency_span_s: float = 60.0
    """TTFT and ITL are the means of the requests observed over this span."""
    itl_per_step: bool = False
    """The ITL is per engine step, not per token (`BackendFacts.itl_per_step`)."""
    workers: tuple[WorkerStatus, ...] = ()
    """Behind a router (`--metrics-url`): every worker at the latest scrape, whose figures
    these sum; empty for a server read directly."""


@dataclass(frozen=True, slots=True)
class GpuView:
    """GPUs, host and server process, from NVML here or a DCGM-style endpoint."""

    source: str | None
    """Where readings come from ("NVML on this machine", "specmon agent at …")."""
    unavailable: str | None
    """Why there are no GPU readings, with how to get them."""
    summary: str | None
    """One line for all GPUs: models, max util, throttling, other processes."""
    warn: bool
    """Throttling, a failed GPU or another process on a GPU."""
    lines: tuple[str, ...]
    """One line per GPU."""
    util_history: tuple[tuple[float, ...], ...]
    """Per GPU, its utilisation over the last minute."""
    host: str | None
    """Host CPU/memory and the server process's CPU/RSS, when known."""
    worst: str | None = None
    """The worst GPU in a table cell ("8×H200 97% 71°C", "GPU 2 throttled"; `analysis.gpus.
    gpu_worst`), for the fleet table; None without readings."""


@dataclass(frozen=True, slots=True)
class SourceView:
    """One source's health, for the diagnostics screen."""

    name: str
    age_s: float | None
    error: str | None
    unavailable: str | None = None
    """Why a source that answered has no figures (no NVML, an endpoint's 404), not "ok"."""


@dataclass(frozen=True, slots=True)
class FigureView:
    """One figure of the catalogue (`analysis.catalogue`) over the recent probes and their
    comparison against a baseline that applies."""

    key: str
    """Its name in the catalogue."""
    value: float | None
    text: str
    """As the dashboard shows it, with its unit; "—" when missing."""


@dataclass(frozen=True, slots=True)
class View:
    """The whole dashboard at one tick."""

    identity: IdentityView
    decode: DecodeView
    spec: SpecView
    baseline: BaselineView
    server: ServerView
    gpus: GpuView
    events: tuple[Event, ...]
    sources: tuple[SourceView, ...]
    missing: tuple[tuple[str, str], ...]
    """(figure, why it is missing) for every figure shown as "—"."""
    bench: BenchView | None = None
    """A bench in progress, of either kind."""
    figure_sources: tuple[tuple[str, str], ...] = ()
    """(figure, where it came from) for the last probe's acceptance (`probe_figure_sources`)."""
    figures: tuple[FigureView, ...] = ()
    """Every figure of the catalogue, in its order (the `i` screen's "Every figure now")."""
