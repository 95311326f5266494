"""llama.cpp's `llama-server`: identity from `/props`, `llamacpp:` metrics, a native `/completion`
probe.

Facts from the real server (build b1-0c1e570, tests/fixtures/llamacpp-cpu):

- `/props` names the build (`build_info`), the model (`model_alias`, `model_path`) and whether
  `/metrics` is on (`endpoint_metrics`; `--metrics`, else `/metrics` answers 501). `/slots` says
  per slot whether speculation is on and its types (`"speculative.types": "none,draft-simple"`).
- `/metrics` has no labels but the draft position, integer counters, and every counter moves
  when a request finishes (its slot is released).
- The native stream sends one chunk per token even when a step accepts several drafts, with the
  cumulative `tokens_predicted`; the final chunk's `timings` carry `predicted_n`, `draft_n` and
  `draft_n_accepted`. Every decode step yields one token plus the drafts it accepts, so the steps
  after the first token are `predicted_n − 1 − draft_n_accepted`: the cycle time comes from
  those counters, never from chunk gaps.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from specmon.backend_facts import LLAMACPP
from specmon.errors import HttpStatus, MalformedResponse, NotLlamaCpp
from specmon.model import ProbeResult, ServerInfo, ServerMetrics, SpecConfig, StepsSource
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.sources.drafts import metrics_or_none, per_position, scraper, stream_between_scrapes
from specmon.sources.http import get, json_int, parse_json_off_loop
from specmon.sources.metrics import fetch_text, parse_scrape, wanted_off_loop
from specmon.sources.probe import ChunkUpdate, stream_json
from specmon.sources.secrets import mask_args

PREFIXES = ("llamacpp:", "llamacpp_")
COMPLETION = "/completion"
_ARGS = ("model_path", "model_alias", "model_ftype", "total_slots")
WANTED = (
    "tokens_predicted_total",
    "prompt_tokens_total",
    "requests_processing",
    "requests_deferred",
    "spec_decode_num_drafts_total",
    "spec_decode_num_draft_tokens_total",
    "spec_decode_num_accepted_tokens_total",
    "spec_decode_num_accepted_tokens_per_pos_total",
    "tokens_predicted_seconds_total",
)
"""The families `metrics_from_text` reads (short names): a large scrape is sifted for them first,
off the event loop (`wanted_off_loop`), as every backend's."""


async def fetch_server_info(
    client: httpx.AsyncClient, *, scrape: ServerMetrics | None = None
) -> ServerInfo:
    """Identify a `llama-server` and read what it exposes of its configuration.

    Args:
        client: The server's client.
        scrape: Not used: the scrape read here must follow `/props` (a scrape taken before a
            relaunch that `/props` shows would not show the new draft length).

    Raises:
        NotLlamaCpp: No `/props` naming a llama.cpp build.
        SourceError: Any other failure, typed (auth, unreachable, malformed …).
    """
    try:
        props = await parse_json_off_loop(await get(client, "/props"))
    except (HttpStatus, MalformedResponse):
        raise NotLlamaCpp(f"{client.base_url}: no llama.cpp /props") from None
    if not isinstance(props, dict) or not isinstance(props.get("build_info"), str):
        raise NotLlamaCpp(f"{client.base_url}/props: not llama.cpp's answer")
    slots = await _slots(client)
    metrics = None
    if props.get("endpoint_metrics"):
        metrics = await metrics_or_none(client, fetch_metrics)
    return server_info_from(props, slots, metrics)


async def _slots(client: httpx.AsyncClient) -> list[Mapping[str, Any]] | None:
    """`/slots`, or None where the server turns it off (`--no-slots`)."""
    try:
        body = await parse_json_off_loop(await get(client, "/slots"))
    except (HttpStatus, MalformedResponse):
        return None
    return [s for s in body if isinstance(s, dict)] if isinstance(body, list) else None


def server_info_from(
    props: Mapping[str, Any],
    slots: list[Mapping[str, Any]] | None,
    metrics: ServerMetrics | None,
) -> ServerInfo:
    """Normalise what `llama-server` answered into a ServerInfo.

    Args:
        props: `/props`.
        slots: `/slots` (None when turned off): speculation is on when a slot says so.
        metrics: One scrape, when metrics are on: the draft length shows after the first
            speculative request (one series per position).
    """
    args: dict[str, Any] = {k: props[k] for k in _ARGS if k in props}
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and "n_ctx" in settings:
        args["n_ctx"] = settings["n_ctx"]  # per slot
    # No speculative args: what llama.cpp shows of speculation (types in a used slot, the draft
    # length in the counters) appears with the first request, and args must not change then
    # (a change of args means a restart to `bench`).
    model = props.get("model_alias") or props.get("model_path")
    return ServerInfo(
        backend=LLAMACPP.name,
        version=str(props["build_info"]),
        model=model if isinstance(model, str) else None,
        tp_size=None,
        dp_size=None,
        pp_size=None,
        speculative=_speculation(slots, metrics),
        stream_interval=None,
        cuda_graph_disabled=None,
        cuda_graph_max_bs=None,
        metrics_enabled=props.get("endpoint_metrics") is True,
        args=mask_args(args),
        info_route="/props",
    )


def _speculation(
    slots: list[Mapping[str, Any]] | None, metrics: ServerMetrics | None
) -> SpecConfig | None:
    positions = metrics.spec_accepted_per_position if metrics is not None else None
    n_max = len(positions) if positions else None
    if slots is None:  # unknown from /slots; drafts accepted since start say it is on
        return SpecConfig("draft", n_max, None, None) if positions else None
    on = [s for s in slots if s.get("speculative") is True]
    if not on:
        return None
    # A slot's params name the types (e.g. "none,draft-simple") once it has served a request.
    names = sorted({t for s in on for t in _types(s) if t != "none"})
    return SpecConfig(",".join(names) or "draft", n_max, None, None)


def _types(slot: Mapping[str, Any]) -> list[str]:
    params = slot.get("params")
    types = params.get("speculative.types") if isinstance(params, dict) else None
    return [t for t in types.split(",") if t] if isinstance(types, str) else []


def metrics_from_text(text: str) -> ServerMetrics:
    """The figures specmon uses from one `llama-server` scrape."""
    scrape = parse_scrape(text, PREFIXES)
    return ServerMetrics(
        generation_tokens_total=scrape.total("tokens_predicted_total"),
        prompt_tokens_total=scrape.total("prompt_tokens_total"),
        num_running_reqs=scrape.total("requests_processing"),
        num_queue_reqs=scrape.total("requests_deferred"),
        spec_drafts_total=scrape.total("spec_decode_num_drafts_total"),
        spec_draft_tokens_total=scrape.total("spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens_total=scrape.total("spec_decode_num_accepted_tokens_total"),
        spec_accepted_per_position=per_position(
            scrape.by_name.get("spec_decode_num_accepted_tokens_per_pos_total", [])
        ),
        decode_seconds_total=scrape.total("tokens_predicted_seconds_total"),
        families=scrape.names,
    )


async def fetch_metrics(client: httpx.AsyncClient) -> ServerMetrics:
    """Scrape `/metrics`.

    Raises:
        MetricsDisabled: 501 (or 404): the server was started without `--metrics`.
        SourceError: Any other failure, typed.
    """
    text = await fetch_text(client, "start llama-server with --metrics", (404, 501))
    return metrics_from_text(await wanted_off_loop(text, PREFIXES, WANTED))


def completion_payload(prompt: str, max_tokens: int, temperature: float = 0.0) -> dict[str, Any]:
    """The probe's native request: greedy, `ignore_eos`, streamed."""
    return {
        "prompt": prompt,
        "n_predict": max_tokens,
        "temperature": temperature,
        "ignore_eos": True,
        "stream": True,
    }


def parse_chunk(data: str) -> ChunkUpdate:
    """Decode one `data:` payload of a native `/completion` stream.

    Raises:
        StreamErrorEvent: The payload is the server's `{"error": …}`.
        MalformedResponse: Not a chunk of the expected shape.
    """
    body = stream_json(data)
    tokens = json_int(body.get("tokens_predicted"))
    if tokens is None or tokens < 0:
        raise MalformedResponse("llama.cpp stream chunk has no valid tokens_predicted")
    finished = body.get("stop") is True
    reason = body.get("stop_type") if finished else None
    return ChunkUpdate(
        completion_tokens=tokens,
        prompt_tokens=json_int(body.get("tokens_evaluated")),
        finished=finished,
        finish_reason=reason if isinstance(reason, str) else None,
        verify_ct=_steps(body.get("timings")) if finished else None,
        accept_length=None,
    )


def _steps(timings: object) -> int | None:
    """Decode steps after the first token, from the final `timings` (None without drafts)."""
    if not isinstance(timings, dict):
        return None
    predicted, accepted = (
        json_int(timings.get("predicted_n")),
        json_int(timings.get("draft_n_accepted")),
    )
    if predicted is None or accepted is None:
        return None  # `draft_n*` appear only when the request drafted
    steps = predicted - 1 - accepted
    return steps if steps > 0 else None


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
    """One native streamed completion, timed per chunk, between two `/metrics` scrapes.

    `scrape` reads `/metrics` instead of the client's own (behind a router: the workers' sums).

    Raises:
        SourceError: Typed, as `specmon.sources.probe.run_probe`.
    """
    fetch = scraper(scrape, fetch_metrics)
    payload = completion_payload(prompt, max_tokens, temperature)
    probe = await stream_between_scrapes(
        client, fetch, COMPLETION, payload, parse_chunk, clock=clock, wall=wall
    )
    result = probe.result
    return ProbeResult(
        sent_at=result.sent_at,
        chunks=result.chunks,
        prompt_tokens=result.prompt_tokens,
        verify_ct=result.verify_ct,
        server_accept_length=None,
        finish_reason=result.finish_reason,
        steps_source=StepsSource.TIMINGS,
        chunks_are_steps=False,
        scrapes=probe.scrapes,
    )
