"""TensorRT-LLM's `trtllm-serve`: identity from `/version` and `/v1/models`, `trtllm_` metrics
from `/prometheus/metrics`, and an OpenAI streaming probe.

Shapes read from its source (NVIDIA/TensorRT-LLM, `tensorrt_llm/serve/openai_server.py`,
`openai_protocol.py`, `postprocess_handlers.py`, `tensorrt_llm/metrics/collector.py`; no real
server was run, docs/interfaces.md §7 says what stays uncertain):

- `/version` answers `{"version": …}` as vLLM's does; the model card of `/v1/models` is
  `{"id", "object": "model", "created", "owned_by": "tensorrt_llm"}`, which no other server
  sends: that owner tells it from vLLM.
- `/metrics` is JSON (the engine's iteration stats, drained from a queue the Prometheus
  collector drains too): not read. The Prometheus text is at `/prometheus/metrics`, served only
  with `return_perf_metrics: true` (404 otherwise), from prometheus_client's multiprocess
  collector: labels `engine_type` and `model_name` ("undefined"), gauges with a `pid`, no
  `_created` series, no process start time.
- Every per-request family moves when a request finishes, the per-position ones included:
  `trtllm_spec_decode_drafted_tokens_total{token_position}` and
  `…_accepted_tokens_total{token_position}` (PR #12636). The iteration-level
  `trtllm_spec_decode_num_draft_tokens_total` and `…_num_accepted_tokens_total` add only the
  latest iteration's figures each time a request finishes (the collector keeps the last of the
  stats it drains), so specmon reads the per-position counters instead: their sums are every
  draft token proposed and accepted, and position 0's drafted count is the drafting steps.
- A streamed completion sends one chunk per iteration with every token it produced; its choice
  carries `avg_decoded_tokens_per_iter`, the request's generated tokens over its decoding
  iterations (the context one included: 1 without speculation), and
  `stream_options.continuous_usage_stats` puts the cumulative usage in every chunk. `model` is
  required.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

import httpx

from specmon.backend_facts import TRTLLM
from specmon.errors import HttpStatus, MalformedResponse, NotThisServer
from specmon.model import ProbeResult, ServerInfo, ServerMetrics, StepsSource
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
from specmon.sources.metrics import fetch_text, parse_scrape, wanted_off_loop, wanted_text
from specmon.sources.probe import ChunkUpdate
from specmon.sources.secrets import mask_args

PREFIXES = ("trtllm_",)
METRICS_PATH = "/prometheus/metrics"
OWNER = "tensorrt_llm"
"""`owned_by` of its model cards (`openai_protocol.ModelCard`)."""
POSITION = "token_position"


async def fetch_server_info(
    client: httpx.AsyncClient, *, scrape: ServerMetrics | None = None
) -> ServerInfo:
    """Identify a `trtllm-serve` and read what it exposes of its configuration.

    Args:
        client: The server's client.
        scrape: A scrape just taken (the dashboard's poll), used instead of scraping again.

    Raises:
        NotThisServer: No `/version`, or a model card not owned by `tensorrt_llm`.
        SourceError: Any other failure, typed (auth, unreachable, malformed …).
    """
    version = await read_version(client, NotThisServer, "TensorRT-LLM")
    card = await _model_card(client)
    if card.get("owned_by") != OWNER:
        raise NotThisServer(f"{client.base_url}/v1/models: not TensorRT-LLM's model card")
    metrics = scrape if scrape is not None else await metrics_or_none(client, fetch_metrics)
    return server_info_from(version, card, metrics)


async def _model_card(client: httpx.AsyncClient) -> Mapping[str, Any]:
    """The first model card; NotThisServer where none can be read (detection moves on)."""
    try:
        return await first_model_card(client, NotThisServer)
    except (HttpStatus, MalformedResponse):
        raise NotThisServer(f"{client.base_url}: no /v1/models") from None


def server_info_from(
    version: str, card: Mapping[str, Any], metrics: ServerMetrics | None
) -> ServerInfo:
    """Normalise what `trtllm-serve` answered into a ServerInfo.

    Args:
        version: `/version`'s version.
        card: The first model card of `/v1/models`.
        metrics: One scrape, when metrics are on: the draft length shows once a speculative
            request has finished (one series per draft position).
    """
    served = card.get("id")
    return ServerInfo(
        backend=TRTLLM.name,
        version=version,
        model=served if isinstance(served, str) else None,
        tp_size=None,
        dp_size=None,
        pp_size=None,
        # The method is not served; the draft length is, by its positions.
        speculative=spec_from_positions(metrics, TRTLLM.length_name),
        stream_interval=None,
        cuda_graph_disabled=None,
        cuda_graph_max_bs=None,
        metrics_enabled=metrics is not None,
        # Nothing of its configuration is served: the args name the model only (args that
        # change between two reads mean a restart to `bench`).
        args=mask_args({"model": served}),
        info_route="/version",
    )


# The families read (short names, matched as prefixes).
WANTED = (
    "generation_tokens_total",
    "prompt_tokens_total",
    "request_success_total",
    "num_requests_running",
    "num_requests_waiting",
    "kv_cache_utilization",
    "time_to_first_token_seconds",
    "spec_decode_",
)


def metrics_from_text(text: str) -> ServerMetrics:
    """Aggregate the figures specmon uses from one `/prometheus/metrics` scrape."""
    return _metrics(wanted_text(text, PREFIXES, WANTED))


@functools.lru_cache(maxsize=4)  # an idle server repeats itself: parsed once (server, baseline)
def _metrics(text: str) -> ServerMetrics:
    scrape = parse_scrape(text, PREFIXES)
    drafted = per_position(scrape.by_name.get("spec_decode_drafted_tokens_total", []), POSITION)
    accepted = per_position(scrape.by_name.get("spec_decode_accepted_tokens_total", []), POSITION)
    return ServerMetrics(
        generation_tokens_total=scrape.total("generation_tokens_total"),
        prompt_tokens_total=scrape.total("prompt_tokens_total"),
        num_requests_total=scrape.total("request_success_total"),
        num_running_reqs=scrape.total("num_requests_running"),
        num_queue_reqs=scrape.total("num_requests_waiting"),
        token_usage=scrape.mean("kv_cache_utilization"),
        ttft_seconds=scrape.histogram("time_to_first_token_seconds"),
        # The latest iteration's acceptance length (a gauge).
        spec_accept_length=scrape.mean("spec_decode_acceptance_length"),
        # Every drafting step drafts position 0.
        spec_drafts_total=drafted[0] if drafted else None,
        spec_draft_tokens_total=sum(drafted) if drafted else None,
        spec_accepted_tokens_total=sum(accepted or ()) if drafted else None,
        spec_accepted_per_position=_padded(accepted, len(drafted)) if drafted else None,
        families=scrape.names,
    )


def _padded(accepted: tuple[float, ...] | None, length: int) -> tuple[float, ...]:
    """Accepted by position, one per position drafted (a position never accepted has no series:
    the collector adds a child only for a count above 0)."""
    known = accepted or ()
    return tuple(known[i] if i < len(known) else 0.0 for i in range(length))


async def fetch_metrics(client: httpx.AsyncClient) -> ServerMetrics:
    """Scrape `/prometheus/metrics`.

    Raises:
        MetricsDisabled: 404: launched without `return_perf_metrics: true`.
        SourceError: Typed (unreachable, auth, malformed …).
    """
    text = await fetch_text(
        client,
        "launch with return_perf_metrics: true in --extra_llm_api_options",
        path=METRICS_PATH,
    )
    return _metrics(await wanted_off_loop(text, PREFIXES, WANTED))


_MODELS: weakref.WeakKeyDictionary[httpx.AsyncClient, str] = weakref.WeakKeyDictionary()
"""The served model per client: a completion must name it."""


async def _served_model(client: httpx.AsyncClient) -> str:
    known = _MODELS.get(client)
    if known is None:
        served = (await _model_card(client)).get("id")
        if not isinstance(served, str):
            raise MalformedResponse(f"{client.base_url}/v1/models: the model has no id")
        known = _MODELS[client] = served
    return known


def parse_chunk(data: str) -> ChunkUpdate:
    """Decode one `data:` payload of a streamed `/v1/completions` answer.

    The request's own accept length comes from `avg_decoded_tokens_per_iter` (tokens over
    decoding iterations, the context iteration included) and the cumulative tokens N: its
    iterations are N / avg, its verify steps one fewer, and they produced N − 1 tokens.

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: Not a chunk of the expected shape (e.g. no per-chunk usage).
    """
    chunk = completion_chunk(data, "TensorRT-LLM")
    tokens = chunk.update.completion_tokens
    accept_length = _accept_length(chunk.choice.get("avg_decoded_tokens_per_iter"), tokens)
    return replace(chunk.update, accept_length=accept_length)


def _accept_length(avg: object, tokens: int) -> float | None:
    if isinstance(avg, bool) or not isinstance(avg, int | float) or avg <= 0:
        return None
    steps = tokens / avg - 1
    return (tokens - 1) / steps if steps >= 0.5 else None


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
    """One streamed completion, timed per chunk, between two scrapes.

    The chunks after the first are the verify steps when speculation is on (the per-position
    counters exist, by the scrape after the probe at the latest). `scrape` reads `/metrics`
    instead of the client's own (behind a router: the workers' sums).

    Raises:
        SourceError: Typed, as `specmon.sources.probe.run_probe`.
    """
    fetch = scraper(scrape, fetch_metrics)
    payload = {
        "model": await _served_model(client),
        **completions_payload(prompt, max_tokens, temperature),
    }
    probe = await stream_between_scrapes(
        client, fetch, COMPLETIONS, payload, parse_chunk, clock=clock, wall=wall
    )
    result = probe.result
    # The per-position counters show speculation from the first finished request on: the
    # probe's own, on a fresh server.
    speculative = any(
        m is not None and m.spec_drafts_total is not None for m in (probe.before, probe.after)
    )
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
    )
