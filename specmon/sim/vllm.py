"""The simulated vLLM 0.32.0: `/version`, `/v1/models`, `/metrics` and streamed `/v1/completions`.

Shapes of the real capture (tests/fixtures/vllm-0.32.0-cpu):

- `/metrics` is prometheus_client's default registry in a single-API-server vLLM, so the text is
  rendered here by prometheus_client itself (`_created` series included) from families named,
  documented and labelled (`engine`, `model_name`) as vLLM's. Labelled children exist from
  startup at 0; the `spec_decode_*` families only with speculation.
- Counters move every engine step, as vLLM's iteration stats do; the draft counters count one
  draft per request per verify step, the accepted tokens as verified (even past `max_tokens`).
- A stream sends one chunk per engine step carrying every token the step produced; the chunk of
  the last step has `finish_reason`; `stream_options.include_usage` adds a usage-only chunk,
  `continuous_usage_stats` puts the cumulative usage in every chunk. `model` may be omitted.
- `--api-key` guards `/v1/*` only.
- `--per-request-spec-decode-metrics summary|detailed` adds `metrics.speculative_decoding` to a
  completion's response, in a stream to its final usage chunk (vllm/v1/metrics/stats.py
  `RequestSpecDecodeMetrics.to_dict`; entrypoints/openai/completion/serving.py).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from specmon.sim.config import VLLM_VERSION, SimConfig
from specmon.sim.engine import Engine, SimRequest, StepOut
from specmon.sim.metrics import CONTENT_TYPE_TEXT
from specmon.sim.openai_api import (
    completion_usage,
    submit_completion,
    until_finished,
    usage_options,
)
from specmon.sim.sse import json_response, stream_request

if TYPE_CHECKING:
    from specmon.sim.server import SimState

_LABELS = ("model_name", "engine")
_TTFT_BUCKETS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25)
_TTFT_BUCKETS += (0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_ITL_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)
_ITL_BUCKETS += (0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
_E2E_BUCKETS: tuple[float, ...] = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0)
_E2E_BUCKETS += (30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
# 1-2-5 up to max_model_len (2048 in the capture).
_TOKEN_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0)
_FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
_DEFAULT_MAX_TOKENS = 16


class VllmMetrics:
    """vLLM's `/metrics` families, moved by the engine's events (`EngineHooks`)."""

    def __init__(self, config: SimConfig, started_wall: float) -> None:
        self.config = config
        self.registry = r = CollectorRegistry()
        self.draft_length = config.num_draft_tokens - 1
        start = Gauge(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            registry=r,
        )
        start.set(started_wall)
        labels = {"model_name": config.model_name, "engine": "0"}

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, _LABELS, registry=r)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, _LABELS, registry=r)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, _LABELS, registry=r, buckets=buckets)

        self.spec: tuple[Counter, Counter, Counter] | None = None
        if config.speculative:
            self.spec = (
                counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
            )
            per_pos = Counter(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                (*_LABELS, "position"),
                registry=r,
            )
            self.per_pos = [
                per_pos.labels(**labels, position=str(i)) for i in range(self.draft_length)
            ]
        self.running = gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."
        )
        self.waiting = gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."
        )
        self.kv_usage = gauge(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
        )
        self.prompt = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        self.generation = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        )
        self.success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            (*_LABELS, "finished_reason"),
            registry=r,
        )
        self.req_prompt = histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", _TOKEN_BUCKETS
        )
        self.req_generation = histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            _TOKEN_BUCKETS,
        )
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            _TTFT_BUCKETS,
        )
        self.itl = histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            _ITL_BUCKETS,
        )
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            _E2E_BUCKETS,
        )
        # vLLM creates every engine-labelled child at startup: the series exist at 0.
        families: list[Counter | Gauge | Histogram] = [self.running, self.waiting, self.kv_usage]
        families += [self.prompt, self.generation, *(self.spec or ())]
        families += [self.req_prompt, self.req_generation, self.ttft, self.itl, self.e2e]
        for family in families:
            family.labels(**labels)
        for reason in _FINISHED_REASONS:
            self.success.labels(**labels, finished_reason=reason)
        self.labels = labels

    def render(self) -> bytes:
        """The exposition text, as prometheus_client writes it for vLLM."""
        return generate_latest(self.registry)

    # ------------------------------------------------------------------ EngineHooks

    def on_prefill_start(self, batch: list[SimRequest], start: float, end: float) -> None:
        """Prompt tokens are counted in the iteration that computes them."""
        self.prompt.labels(**self.labels).inc(sum(r.prompt_tokens for r in batch))

    def on_first_token(self, req: SimRequest) -> None:
        """The prefill step's token, and the request's time to first token."""
        self.generation.labels(**self.labels).inc()
        self.ttft.labels(**self.labels).observe(req.first_token - req.arrival)

    def on_verify(self, req: SimRequest, drafted: int, accepted: int) -> None:
        """One draft of `drafted` tokens verified for `req`, `accepted` of them taken."""
        if self.spec is None:
            return
        drafts, draft_tokens, accepted_tokens = self.spec
        drafts.labels(**self.labels).inc()
        draft_tokens.labels(**self.labels).inc(drafted)
        accepted_tokens.labels(**self.labels).inc(accepted)
        for position in self.per_pos[:accepted]:
            position.inc()

    def on_decode_step(
        self,
        engine: Engine,
        *,
        tokens: int,
        emitted: int,
        batch_size: int,
        correct_drafts: int,
        now: float,
    ) -> None:
        """An engine step: the tokens it gave the requests, and the scheduler gauges."""
        self.generation.labels(**self.labels).inc(emitted)
        self.running.labels(**self.labels).set(len(engine.running))
        self.waiting.labels(**self.labels).set(len(engine.waiting))
        used = sum(r.prompt_tokens + r.completion_tokens for r in engine.running)
        self.kv_usage.labels(**self.labels).set(min(used / 1_048_576, 1.0))

    def on_output(self, req: SimRequest, interval: float, new_tokens: int) -> None:
        """vLLM's inter-token latency is per engine step and request, not per token."""
        self.itl.labels(**self.labels).observe(interval)

    def on_finish(self, req: SimRequest) -> None:
        """A finished request's totals."""
        self.success.labels(**self.labels, finished_reason="length").inc()
        self.req_prompt.labels(**self.labels).observe(req.prompt_tokens)
        self.req_generation.labels(**self.labels).observe(req.completion_tokens)
        self.e2e.labels(**self.labels).observe(req.finished_at - req.arrival)

    def on_abort(self, req: SimRequest) -> None:
        """An aborted request."""
        self.success.labels(**self.labels, finished_reason="abort").inc()


def add_routes(app: web.Application, state: SimState, metrics: VllmMetrics) -> None:
    """vLLM's routes for one server lifetime."""

    async def version(_: web.Request) -> web.StreamResponse:
        return json_response({"version": VLLM_VERSION})

    async def models(_: web.Request) -> web.StreamResponse:
        cfg = state.config
        card = {
            "id": cfg.model_name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "vllm",
            "root": cfg.model_path,
            "parent": None,
            "max_model_len": cfg.context_length,
            "permission": [],
        }
        return json_response({"object": "list", "data": [card]})

    async def health(_: web.Request) -> web.StreamResponse:
        return web.Response(status=200)

    async def render_metrics(_: web.Request) -> web.StreamResponse:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_TEXT})

    async def completions(request: web.Request) -> web.StreamResponse:
        return await handle_completions(request, state)

    r = app.router
    r.add_get("/version", version)
    r.add_get("/v1/models", models)
    r.add_get("/health", health)
    r.add_get("/metrics", render_metrics)
    r.add_post("/v1/completions", completions)


async def handle_completions(request: web.Request, state: SimState) -> web.StreamResponse:
    """`POST /v1/completions`, streamed or not."""
    try:
        body = await request.json()
    except ValueError:
        return json_response({"error": {"message": "Invalid JSON body", "code": 400}}, 400)
    if not isinstance(body, dict):
        return json_response({"error": {"message": "Expected a JSON object", "code": 400}}, 400)
    req = submit_completion(request, state, body, _DEFAULT_MAX_TOKENS)
    head = {
        "id": f"cmpl-{req.rid[:16]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model") or state.config.model_name,
    }
    try:
        if req.stream:
            return await _stream(request, state, req, body, head)
        return await _complete(state, req, head)
    finally:
        state.finish_record(req)


async def _stream(
    request: web.Request,
    state: SimState,
    req: SimRequest,
    body: dict[str, Any],
    head: dict[str, Any],
) -> web.StreamResponse:
    include_usage, continuous = usage_options(body)
    sent = 0

    def render(out: StepOut, first: bool) -> list[dict[str, Any]]:
        nonlocal sent
        text = req.text(out.completion_tokens)[len(req.text(sent)) :]
        sent = out.completion_tokens
        choice = {
            "index": 0,
            "text": text.lstrip() if first else text,
            "logprobs": None,
            "finish_reason": "length" if out.finished else None,
            "stop_reason": None,
            "prompt_token_ids": None,
            "token_ids": None,
        }
        chunk: dict[str, Any] = {**head, "choices": [choice]}
        if continuous:
            chunk["usage"] = completion_usage(req, out.completion_tokens)
        return [chunk]

    def tail() -> list[dict[str, Any]]:
        if not include_usage:  # the per-request metrics ride on the usage chunk alone
            return []
        fingerprint = f"vllm-{VLLM_VERSION}-sim"
        usage = completion_usage(req, req.completion_tokens)
        chunk = {**head, "choices": [], "usage": usage, "system_fingerprint": fingerprint}
        return [{**chunk, **_per_request_metrics(state, req)}]

    error = {"error": {"object": "error", "message": "Simulated mid-stream failure", "code": 500}}
    return await stream_request(
        request,
        state.engine,
        req,
        state.faults,
        render,
        error,
        tail,
        over=lambda: state.finish_record(req),
    )


async def _complete(state: SimState, req: SimRequest, head: dict[str, Any]) -> web.StreamResponse:
    if not await until_finished(req):
        return web.Response(status=503)
    choice = {"index": 0, "text": req.text().lstrip(), "logprobs": None, "finish_reason": "length"}
    usage = completion_usage(req, req.completion_tokens)
    return json_response(
        {**head, "choices": [choice], "usage": usage, **_per_request_metrics(state, req)}
    )


def _per_request_metrics(state: SimState, req: SimRequest) -> dict[str, Any]:
    """`{"metrics": {"speculative_decoding": …}}` when the server was launched with per-request
    metrics and speculates, else nothing: `RequestSpecDecodeMetrics.to_dict` of the request's
    verify steps (the histogram counts the steps that drafted, by drafts accepted)."""
    level = state.config.per_request_spec_decode_metrics
    if level == "none" or not state.config.speculative:
        return {}
    steps = sum(req.histogram)
    accepted = sum(j * count for j, count in enumerate(req.histogram))
    drafted = sum(req.record.step_drafted)
    details: dict[str, Any] = {
        "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
        "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
        "acceptance_histogram": list(req.histogram),
        "num_spec_steps": steps,
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": len(req.histogram) - 1,
    }
    if level == "detailed" and req.record.step_accepted:
        details["per_step_accepted"] = list(req.record.step_accepted)
        details["per_step_drafted"] = list(req.record.step_drafted)
    return {"metrics": {"speculative_decoding": details}}
