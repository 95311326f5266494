"""vLLM: identity from `/version` and `/v1/models`, `vllm:` metrics, and an OpenAI streaming probe.

Facts from the real vLLM 0.32.0 (CPU) captures in tests/fixtures/vllm-0.32.0-cpu and
docs/interfaces.md §6:

- `/version` answers `{"version": "0.32.0"}` (SGLang has no such route); `/v1/models` names the
  served model, its path (`root`) and `max_model_len`.
- The server's configuration is exposed only with `VLLM_SERVER_DEV_MODE=1`, at
  `/server_info?config_format=json`; otherwise speculation shows in `/metrics`: the
  `vllm:spec_decode_*` families exist only with a speculative config, one
  `…_per_pos_total{position}` series per draft position.
- A streamed completion sends one chunk per engine step holding every token accepted in it
  (until the client falls behind: then vLLM merges steps), so its chunks after the first are the
  verify steps; `stream_options.continuous_usage_stats` puts the cumulative
  `usage.completion_tokens` in every chunk. When the probe ran alone, vLLM's own count of its
  steps (Δ`inter_token_latency_seconds_count`, from the scrapes around it) replaces the chunk
  count (`analysis.figures`).
- Launched with `--per-request-spec-decode-metrics summary|detailed` (0.32+), the final usage
  chunk carries `metrics.speculative_decoding`: the request's own histogram of drafting steps by
  drafts accepted and its mean acceptance length (vllm/v1/metrics/stats.py
  `RequestSpecDecodeMetrics.to_dict`). The probe reads them when they come (nothing to ask:
  the launch flag decides) and needs no quiet server for them; without them, the counters'
  deltas serve when the probe ran alone.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import httpx

from specmon.backend_facts import VLLM
from specmon.errors import HttpStatus, MalformedResponse, NotVllm
from specmon.model import (
    PositionSource,
    ProbeResult,
    ServerInfo,
    ServerMetrics,
    SpecConfig,
    StepsSource,
)
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sources.backends.openai_compat import (
    COMPLETIONS,
    completion_chunk,
    completions_payload,
    first_model_card,
    read_version,
)
from specmon.sources.drafts import (
    metrics_or_none,
    per_position,
    scraper,
    spec_from_positions,
    stream_between_scrapes,
)
from specmon.sources.http import get, json_int, parse_json
from specmon.sources.metrics import fetch_text, parse_scrape, wanted_off_loop, wanted_text
from specmon.sources.probe import ChunkUpdate, histogram_of
from specmon.sources.secrets import mask_args

PREFIXES = ("vllm:", "vllm_")
PROCESS = "process_"  # prometheus_client's process collector: the start time marks a launch

# Server args kept from the dev-mode config: the launch choices that define a configuration
# (sizes the server derives at start, ports and ids that change per launch are left out).
_DEV_ARGS = {
    "model_config": ("model", "served_model_name", "dtype", "max_model_len", "quantization"),
    "cache_config": ("block_size", "cache_dtype", "enable_prefix_caching"),
    "parallel_config": ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"),
    "scheduler_config": ("max_num_seqs", "max_num_batched_tokens"),
}
_SPEC_ARGS = ("method", "num_speculative_tokens", "model", "prompt_lookup_min", "prompt_lookup_max")


@dataclass(frozen=True, slots=True)
class _Identity:
    """What a launch of vLLM answered on its identity routes, and the launch's start time."""

    process_start_time: float
    version: str
    card: Mapping[str, Any]
    config: Mapping[str, Any] | None


# Per client (one per watched server): its server's last launch. /version, /v1/models and the
# dev-mode /server_info are fixed for a launch (its command line and environment), so while
# /metrics shows the same process start time they are not asked again: one request every 5 s
# instead of four, none where the caller hands over a scrape it has just taken.
_LAUNCHES: weakref.WeakKeyDictionary[httpx.AsyncClient, _Identity] = weakref.WeakKeyDictionary()


async def fetch_server_info(
    client: httpx.AsyncClient, *, scrape: ServerMetrics | None = None
) -> ServerInfo:
    """Identify a vLLM server and read what it exposes of its configuration.

    After a first full read through `client`, the identity routes are read again only when
    `/metrics` shows another process start time (a relaunch) or none.

    Args:
        client: The server's client.
        scrape: A `/metrics` scrape just taken through `client` (the dashboard's poll): used
            instead of scraping again when it shows the launch already known.

    Raises:
        NotVllm: No `/version` with a version string: not vLLM.
        SourceError: Any other failure, typed (auth, unreachable, malformed …).
    """
    known = _LAUNCHES.pop(client, None)
    metrics = None
    if known is not None:
        same = scrape is not None and scrape.process_start_time == known.process_start_time
        metrics = scrape if same else await metrics_or_none(client, fetch_metrics)
        if metrics is not None and metrics.process_start_time == known.process_start_time:
            _LAUNCHES[client] = known
            return server_info_from(known.version, known.card, known.config, metrics)
    version, card, config = await _read_identity(client)
    if known is None:  # the first read asks /version first: it tells vLLM from other servers
        metrics = await metrics_or_none(client, fetch_metrics)
    if metrics is not None and metrics.process_start_time is not None:
        _LAUNCHES[client] = _Identity(metrics.process_start_time, version, card, config)
    return server_info_from(version, card, config, metrics)


async def _read_identity(
    client: httpx.AsyncClient,
) -> tuple[str, Mapping[str, Any], Mapping[str, Any] | None]:
    """`/version`, the first model card and the dev-mode config (None outside dev mode)."""
    version = await read_version(client, NotVllm, "vLLM")
    return version, await first_model_card(client, MalformedResponse), await _dev_config(client)


async def _dev_config(client: httpx.AsyncClient) -> Mapping[str, Any] | None:
    """`vllm_config` from `/server_info` (only with `VLLM_SERVER_DEV_MODE=1`), else None."""
    try:
        body = parse_json(await get(client, "/server_info", params={"config_format": "json"}))
    except (HttpStatus, MalformedResponse):
        return None  # 404 outside dev mode; older versions answered with a string
    config = body.get("vllm_config") if isinstance(body, dict) else None
    return config if isinstance(config, dict) else None


def server_info_from(
    version: str,
    card: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    metrics: ServerMetrics | None,
) -> ServerInfo:
    """Normalise what vLLM answered into a ServerInfo.

    Args:
        version: `/version`'s version.
        card: The first model card of `/v1/models`.
        config: The dev-mode `vllm_config`, when the server exposes it.
        metrics: One `/metrics` scrape, when it could be read (speculation shows there).
    """
    args: dict[str, Any] = {
        "model": card.get("root"),
        "served_model_name": card.get("id"),
        "max_model_len": card.get("max_model_len"),
    }
    spec_config: Mapping[str, Any] = {}
    parallel: Mapping[str, Any] = {}
    if config is not None:
        for section, keys in _DEV_ARGS.items():
            values = config.get(section)
            if isinstance(values, dict):
                args.update({k: values[k] for k in keys if k in values})
        parallel = _dict(config.get("parallel_config"))
        spec_config = _dict(config.get("speculative_config"))
    # Only the dev-mode config goes into args: a scrape can fail, and args that change between
    # two reads mean a restart to `bench`.
    args.update({f"speculative_{k}": spec_config[k] for k in _SPEC_ARGS if k in spec_config})
    served = card.get("id")
    return ServerInfo(
        backend=VLLM.name,
        version=version,
        model=served if isinstance(served, str) else None,
        tp_size=json_int(parallel.get("tensor_parallel_size")),
        dp_size=json_int(parallel.get("data_parallel_size")),
        pp_size=json_int(parallel.get("pipeline_parallel_size")),
        speculative=_speculation(spec_config, metrics),
        stream_interval=None,
        cuda_graph_disabled=None,
        cuda_graph_max_bs=None,
        metrics_enabled=metrics is not None,
        args=mask_args(args),
        info_route="/version",
    )


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _speculation(config: Mapping[str, Any], metrics: ServerMetrics | None) -> SpecConfig | None:
    method = config.get("method")
    if isinstance(method, str):
        draft = config.get("model")
        tokens = config.get("num_speculative_tokens")
        return SpecConfig(
            algorithm=method,
            num_steps=tokens if isinstance(tokens, int) else None,
            eagle_topk=None,
            num_draft_tokens=None,
            draft_model_path=draft if isinstance(draft, str) and draft != method else None,
            length_name=VLLM.length_name,
        )
    # The method is not exposed outside dev mode; the draft length is (one series per position).
    return spec_from_positions(metrics, VLLM.length_name)


# The families read (short names, matched as prefixes: `spec_decode_` covers all four counters).
# vLLM's default registry serves ~56 KB with `_created` twins; parsing only these is ~4x cheaper.
WANTED = (
    "generation_tokens_total",
    "prompt_tokens_total",
    "request_success_total",
    "num_requests_running",
    "num_requests_waiting",
    "kv_cache_usage_perc",
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
    "spec_decode_",
    "start_time_seconds",
)


def metrics_from_text(text: str) -> ServerMetrics:
    """Aggregate the figures specmon uses from one vLLM scrape (summed over engines)."""
    return _metrics(wanted_text(text, (*PREFIXES, PROCESS), WANTED))


@functools.lru_cache(maxsize=4)  # an idle server repeats itself: parsed once (server, baseline)
def _metrics(text: str) -> ServerMetrics:
    scrape = parse_scrape(text, (*PREFIXES, PROCESS))
    return ServerMetrics(
        generation_tokens_total=scrape.total("generation_tokens_total"),
        prompt_tokens_total=scrape.total("prompt_tokens_total"),
        num_requests_total=scrape.total("request_success_total"),
        num_running_reqs=scrape.total("num_requests_running"),
        num_queue_reqs=scrape.total("num_requests_waiting"),
        token_usage=scrape.mean("kv_cache_usage_perc"),
        ttft_seconds=scrape.histogram("time_to_first_token_seconds"),
        # Per engine step and request, not per token: with speculation, one verify step.
        itl_seconds=scrape.histogram("inter_token_latency_seconds"),
        spec_drafts_total=scrape.total("spec_decode_num_drafts_total"),
        spec_draft_tokens_total=scrape.total("spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens_total=scrape.total("spec_decode_num_accepted_tokens_total"),
        spec_accepted_per_position=per_position(
            scrape.by_name.get("spec_decode_num_accepted_tokens_per_pos_total", [])
        ),
        process_start_time=scrape.total("start_time_seconds"),
        families=scrape.names - {"start_time_seconds"},
    )


async def fetch_metrics(client: httpx.AsyncClient) -> ServerMetrics:
    """Scrape vLLM's `/metrics` (always served).

    Raises:
        SourceError: Typed (unreachable, auth, malformed …).
    """
    text = await fetch_text(client, "vLLM always serves them: is a proxy in between?")
    return _metrics(await wanted_off_loop(text, (*PREFIXES, PROCESS), WANTED))


def parse_chunk(data: str) -> ChunkUpdate:
    """Decode one `data:` payload of a streamed `/v1/completions` answer, with the request's
    per-request metrics where they come.

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: Not a chunk of the expected shape (e.g. no per-chunk usage).
    """
    hint = " (stream_options.continuous_usage_stats needs vLLM 0.6 or later)"
    chunk = completion_chunk(data, "vLLM", hint)
    histogram, accept_length = _spec_details(chunk.body)
    return replace(chunk.update, accept_length=accept_length, histogram=histogram)


def _spec_details(body: Mapping[str, Any]) -> tuple[tuple[int, ...] | None, float | None]:
    """The request's `metrics.speculative_decoding` histogram and mean acceptance length.

    (None, None) where the chunk has none, or where their shape is not the one known (the
    field is marked experimental): the probe then takes the counters' path.
    """
    metrics = body.get("metrics")
    details = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if not isinstance(details, dict):
        return None, None
    histogram = histogram_of(details.get("acceptance_histogram"))
    mean = details.get("mean_acceptance_length")
    if histogram is None or isinstance(mean, bool) or not isinstance(mean, int | float):
        return None, None
    return histogram, float(mean) if sum(histogram) else None


async def run_probe(
    client: httpx.AsyncClient,
    *,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int = 500,
    temperature: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
    wall: Callable[[], float] = time.time,
    scrape: Callable[[], Awaitable[ServerMetrics]] | None = None,
) -> ProbeResult:
    """One streamed completion, timed per chunk, between two `/metrics` scrapes.

    The chunks after the first are the verify steps when speculation is on (the draft counters
    exist). vLLM's own account of the request's acceptance is its per-request metrics when it
    was launched with them; else the scrapes give its `1 + Δaccepted/Δdrafts` for the request
    when it ran alone.

    `scrape` reads `/metrics` instead of the client's own (behind a router: the workers' sums).

    Raises:
        SourceError: Typed, as `specmon.sources.probe.run_probe`.
    """
    fetch = scraper(scrape, fetch_metrics)
    payload = completions_payload(prompt, max_tokens, temperature)
    probe = await stream_between_scrapes(
        client, fetch, COMPLETIONS, payload, parse_chunk, clock=clock, wall=wall
    )
    result, before = probe.result, probe.before
    speculative = before is not None and before.spec_drafts_total is not None
    steps = len(result.chunks) - 1
    return ProbeResult(
        sent_at=result.sent_at,
        chunks=result.chunks,
        prompt_tokens=result.prompt_tokens,
        verify_ct=steps if speculative and steps > 0 else None,
        server_accept_length=result.server_accept_length,
        finish_reason=result.finish_reason,
        steps_source=StepsSource.CHUNKS,
        scrapes=probe.scrapes,
        accepted_histogram=result.accepted_histogram,
        histogram_source=PositionSource.DRAFTING_HISTOGRAM,
    )
