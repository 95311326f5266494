"""The simulated TensorRT-LLM `trtllm-serve` (PyTorch backend, launched with
`return_perf_metrics: true` and `enable_iter_perf_stats: true`): `/version`, `/v1/models`,
`/server_info`, `/health`, the JSON `/metrics`, `/prometheus/metrics` and streamed
`/v1/completions`.

Shapes read from its source, no real server run (NVIDIA/TensorRT-LLM `tensorrt_llm/serve/
openai_server.py`, `openai_protocol.py`, `postprocess_handlers.py`, `tensorrt_llm/metrics/
collector.py`; docs/interfaces.md §7 lists what stays uncertain):

- `/prometheus/metrics` is prometheus_client's multiprocess collector over the families of
  `MetricsCollector`, labelled `engine_type` and `model_name` ("undefined" both, as
  `openai_server.py` creates it): label names sorted, gauges with a `pid` label, no `_created`
  series, a family only once a child of it exists (`prompt_cached_tokens_total` from startup,
  the rest from the first finished request). Written here by hand, in that collector's format
  (prometheus_client 0.26: each histogram's `_sum`, buckets, then `_count`).
- When a request finishes its per-request families move (`log_request_metrics_dict`: success by
  finish reason, latency histograms, prompt and generation tokens, the per-position
  `spec_decode_drafted_tokens_total`/`…_accepted_tokens_total{token_position}`, a position's
  child created with its first count above 0), then the iteration collector logs the latest of
  the iteration stats queued since (`log_iteration_stats`: the scheduler gauges, and the
  `spec_decode_num_*_total` counters grow by that one iteration's figures only).
- `/metrics` answers the iteration stats queued since the last drain, as JSON (the collector
  drains the same queue when a request finishes). Each item holds the fields `collector.py`
  reads; `specDecodingStats` with speculation.
- A stream sends one chunk per iteration with the tokens it produced and the request's
  `avg_decoded_tokens_per_iter` (generated tokens over iterations, the context one counted);
  `stream_options.include_usage` adds a usage-only chunk, `continuous_usage_stats` the
  cumulative usage in every chunk; then `[DONE]`. `model` is required (400 without it).
- Families of `collector.py` left out: memory, KV-cache blocks, inflight-batching counts,
  perplexity, HTTP errors (specmon reads none of them).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiohttp import web

from specmon.sim.config import TRTLLM_VERSION, SimConfig
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

_LABELS = {"engine_type": "undefined", "model_name": "undefined"}
_E2E: tuple[float, ...] = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
)
_E2E += (120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
_TTFT: tuple[float, ...] = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
)
_TTFT += (7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_TPOT: tuple[float, ...] = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
)
_TPOT += (10.0, 20.0, 40.0, 80.0)
_PREFILL: tuple[float, ...] = (
    0.001,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    40.0,
)
_PREFILL += (80.0, 160.0, 640.0, 2560.0)
_CACHED = (0.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0)
_HISTOGRAMS = (
    ("e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", _E2E),
    ("time_to_first_token_seconds", "Histogram of time to first token in seconds.", _TTFT),
    ("time_per_output_token_seconds", "Histogram of time per output token in seconds.", _TPOT),
    ("request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", _E2E),
    (
        "request_prefill_time_seconds",
        "Histogram of prefill (context) phase duration in seconds "
        "(first_token_time - first_scheduled_time).",
        _PREFILL,
    ),
    (
        "request_decode_time_seconds",
        "Histogram of decode (generation) phase duration in seconds "
        "(last_token_time - first_token_time).",
        _E2E,
    ),
    (
        "request_inference_time_seconds",
        "Histogram of total inference duration in seconds "
        "(last_token_time - first_scheduled_time).",
        _E2E,
    ),
    ("prompt_cached_tokens_per_request", "Histogram of cached prompt tokens per request.", _CACHED),
)
_DOCS = {
    "request_success_total": "Count of successfully processed requests.",
    "prompt_tokens_total": "Cumulative number of prompt (input) tokens processed.",
    "generation_tokens_total": "Cumulative number of generation (output) tokens produced.",
    "prompt_cached_tokens_total": "Process-lifetime total prompt tokens served from KV cache. "
    "Resets only when the serving process restarts, not when the KV cache is flushed or evicted.",
    "spec_decode_drafted_tokens_total": "Total drafted tokens per speculative decoding position.",
    "spec_decode_accepted_tokens_total": "Total accepted tokens per speculative decoding position.",
    "num_requests_completed_total": "Total number of completed requests across iterations",
    "spec_decode_num_draft_tokens_total": "Total number of draft tokens in speculative decoding",
    "spec_decode_num_accepted_tokens_total": "Total number of accepted tokens in speculative "
    "decoding",
    "num_requests_running": "Number of active requests",
    "num_requests_waiting": "Number of queued requests",
    "max_num_active_requests": "Maximum number of active requests",
    "iteration_latency_seconds": "Iteration latency in seconds",
    "kv_cache_utilization": "KV cache utilization",
    "spec_decode_acceptance_length": "Acceptance length in speculative decoding",
    "spec_decode_draft_overhead": "Draft overhead in speculative decoding",
}
MAX_ACTIVE = 2048
"""`maxNumActiveRequests`: the engine's `max_batch_size` default."""
_QUEUE = 1000
"""Iteration stats kept between two drains (the engine's queue is bounded too)."""
_DEFAULT_MAX_TOKENS = 16


def _labels(**extra: str) -> str:
    pairs = sorted({**_LABELS, **extra}.items())
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


class TrtllmMetrics:
    """trtllm-serve's Prometheus families and iteration stats, moved by the engine's events
    (`EngineHooks`)."""

    def __init__(self, config: SimConfig, pid: str) -> None:
        self.config = config
        self.pid = pid
        # `prompt_cached_tokens_total`: its child is made at startup (`collector.py`).
        self.counters: dict[tuple[str, str], float] = {
            ("prompt_cached_tokens_total", _labels()): 0.0
        }
        self.gauges: dict[str, float] = {}
        self.histograms: dict[str, list[float]] = {}
        """Per family: a count per bucket (+Inf last), then the sum."""
        self.drafted: list[int] = []
        self.accepted: list[int] = []
        self.stats: list[dict[str, Any]] = []
        self.iteration = 0
        self.completed = 0
        # The step being counted: drafts and accepted over the batch.
        self._step_drafted = 0
        self._step_accepted = 0
        self._step_requests = 0

    # ------------------------------------------------------------------ rendering

    def render(self) -> bytes:
        """The exposition text, as prometheus_client's multiprocess collector writes it."""
        lines: list[str] = []
        by_family: dict[str, list[tuple[str, float]]] = {}
        for (name, labels), value in self.counters.items():
            by_family.setdefault(name, []).append((labels, value))
        for name, series in by_family.items():
            lines += [f"# HELP trtllm_{name} {_DOCS[name]}", f"# TYPE trtllm_{name} counter"]
            lines += [f"trtllm_{name}{labels} {float(value)!r}" for labels, value in series]
        for name, value in self.gauges.items():
            lines += [f"# HELP trtllm_{name} {_DOCS[name]}", f"# TYPE trtllm_{name} gauge"]
            lines.append(f"trtllm_{name}{_labels(pid=self.pid)} {float(value)!r}")
        for name, doc, buckets in _HISTOGRAMS:
            counts = self.histograms.get(name)
            if counts is None:
                continue
            lines += [f"# HELP trtllm_{name} {doc}", f"# TYPE trtllm_{name} histogram"]
            lines.append(f"trtllm_{name}_sum{_labels()} {counts[-1]!r}")
            total = 0.0
            for bound, count in zip((*buckets, float("inf")), counts[:-1], strict=True):
                total += count
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(f"trtllm_{name}_bucket{_labels(le=le)} {total!r}")
            lines.append(f"trtllm_{name}_count{_labels()} {total!r}")
        return ("\n".join(lines) + "\n").encode()

    def drain(self) -> list[dict[str, Any]]:
        """The iteration stats queued since the last drain (`/metrics`, or the collector)."""
        out, self.stats = self.stats, []
        return out

    # ------------------------------------------------------------------ updates

    def _inc(self, name: str, value: float, labels: str | None = None) -> None:
        key = (name, labels if labels is not None else _labels())
        self.counters[key] = self.counters.get(key, 0.0) + value

    def _observe(self, name: str, value: float) -> None:
        buckets = next(b for n, _, b in _HISTOGRAMS if n == name)
        counts = self.histograms.setdefault(name, [0.0] * (len(buckets) + 2))
        index = next((i for i, bound in enumerate(buckets) if value <= bound), len(buckets))
        counts[index] += 1
        counts[-1] += value

    # ------------------------------------------------------------------ EngineHooks

    def on_prefill_start(self, batch: list[SimRequest], start: float, end: float) -> None:
        """A context iteration: its stats join the queue."""
        self._queue(end - start, len(batch), drafted=0, accepted=0, requests=0)

    def on_first_token(self, req: SimRequest) -> None:
        """Nothing is counted before a request finishes."""

    def on_verify(self, req: SimRequest, drafted: int, accepted: int) -> None:
        """One draft of `drafted` tokens verified for `req`, `accepted` of them taken."""
        self._step_drafted += drafted
        self._step_accepted += accepted
        self._step_requests += 1

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
        """A generation iteration: its stats join the queue."""
        step_s = engine.model.step_ms(batch_size) / 1000
        self._queue(
            step_s,
            len(engine.running),
            drafted=self._step_drafted,
            accepted=self._step_accepted,
            requests=self._step_requests,
            waiting=len(engine.waiting),
            used=sum(r.prompt_tokens + r.completion_tokens for r in engine.running),
        )
        self._step_drafted = self._step_accepted = self._step_requests = 0

    def _queue(
        self,
        latency_s: float,
        active: int,
        *,
        drafted: int,
        accepted: int,
        requests: int,
        waiting: int = 0,
        used: int = 0,
    ) -> None:
        self.iteration += 1
        item: dict[str, Any] = {
            "iter": self.iteration,
            "iterLatencyMS": latency_s * 1000,
            "numActiveRequests": active,
            "numQueuedRequests": waiting,
            "numCompletedRequests": 0,
            "maxNumActiveRequests": MAX_ACTIVE,
            "kvCacheStats": {"usedNumBlocks": used // 32, "maxNumBlocks": 32768},
        }
        if self.config.speculative:
            cfg = self.config
            draft_share = (cfg.cycle_ms - cfg.plain_step_ms) / cfg.cycle_ms if drafted else 0.0
            item["specDecodingStats"] = {
                "numDraftTokens": drafted,
                "numAcceptedTokens": accepted,
                "numRequestsWithDraftTokens": requests,
                "acceptanceLength": (requests + accepted) / requests if requests else 0.0,
                "iterLatencyMS": latency_s * 1000 * draft_share,
                "draftOverhead": draft_share,
            }
        self.stats = [*self.stats[-(_QUEUE - 1) :], item]

    def on_output(self, req: SimRequest, interval: float, new_tokens: int) -> None:
        """Outputs are counted when the request finishes."""

    def on_finish(self, req: SimRequest) -> None:
        """`log_request_metrics_dict`, then the collector logs the latest queued iteration."""
        self._inc("request_success_total", 1, _labels(finished_reason="length"))
        decode_s = req.finished_at - req.first_token
        self._observe("e2e_request_latency_seconds", req.finished_at - req.arrival)
        self._observe("time_to_first_token_seconds", req.first_token - req.arrival)
        if req.completion_tokens > 1:
            self._observe("time_per_output_token_seconds", decode_s / (req.completion_tokens - 1))
        self._observe("request_queue_time_seconds", max(req.forward_entry - req.arrival, 0.0))
        self._observe("request_prefill_time_seconds", req.prefill_finished - req.forward_entry)
        self._observe("request_decode_time_seconds", decode_s)
        self._observe("request_inference_time_seconds", req.finished_at - req.forward_entry)
        self._observe("prompt_cached_tokens_per_request", req.cached_tokens)
        self._inc("prompt_tokens_total", req.prompt_tokens)
        self._inc("generation_tokens_total", req.completion_tokens)
        if req.cached_tokens:
            self._inc("prompt_cached_tokens_total", req.cached_tokens)
        self._per_position(req.record.step_drafted, req.record.step_accepted)
        self.completed += 1
        latest = self.drain()
        if latest:
            self._log_iteration(latest[-1])

    def on_abort(self, req: SimRequest) -> None:
        """An aborted request logs nothing (its metrics dict has no finish reason)."""

    def _per_position(self, drafted: Sequence[int], accepted: Sequence[int]) -> None:
        longest = max(drafted, default=0)
        for pos in range(longest):
            labels = _labels(token_position=str(pos))
            count = sum(1 for d in drafted if d > pos)
            taken = sum(1 for a in accepted if a > pos)
            if count:
                self._inc("spec_decode_drafted_tokens_total", count, labels)
            if taken:
                self._inc("spec_decode_accepted_tokens_total", taken, labels)

    def _log_iteration(self, item: dict[str, Any]) -> None:
        g = self.gauges
        g["num_requests_running"] = item["numActiveRequests"]
        g["num_requests_waiting"] = item["numQueuedRequests"]
        g["max_num_active_requests"] = item["maxNumActiveRequests"]
        g["iteration_latency_seconds"] = item["iterLatencyMS"] / 1000.0
        kv = item["kvCacheStats"]
        g["kv_cache_utilization"] = kv["usedNumBlocks"] / kv["maxNumBlocks"]
        spec = item.get("specDecodingStats")
        if spec:
            if spec["numDraftTokens"] > 0:
                self._inc("spec_decode_num_draft_tokens_total", spec["numDraftTokens"])
            if spec["numAcceptedTokens"] > 0:
                self._inc("spec_decode_num_accepted_tokens_total", spec["numAcceptedTokens"])
            g["spec_decode_acceptance_length"] = spec["acceptanceLength"]
            g["spec_decode_draft_overhead"] = spec["draftOverhead"]


def add_routes(app: web.Application, state: SimState, metrics: TrtllmMetrics) -> None:
    """trtllm-serve's routes for one server lifetime."""

    async def version(_: web.Request) -> web.StreamResponse:
        return json_response({"version": TRTLLM_VERSION})

    async def models(_: web.Request) -> web.StreamResponse:
        card = {
            "id": state.config.model_name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "tensorrt_llm",
        }
        return json_response({"object": "list", "data": [card]})

    async def server_info(_: web.Request) -> web.StreamResponse:
        return json_response({"disaggregated_params": None})

    async def health(_: web.Request) -> web.StreamResponse:
        return web.Response(status=200)

    async def iteration_stats(_: web.Request) -> web.StreamResponse:
        return json_response(metrics.drain())

    async def prometheus(_: web.Request) -> web.StreamResponse:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_TEXT})

    async def completions(request: web.Request) -> web.StreamResponse:
        return await handle_completions(request, state)

    r = app.router
    r.add_get("/version", version)
    r.add_get("/v1/models", models)
    r.add_get("/server_info", server_info)
    r.add_get("/health", health)
    r.add_get("/metrics", iteration_stats)
    r.add_get("/prometheus/metrics", prometheus)
    r.add_post("/v1/completions", completions)


async def handle_completions(request: web.Request, state: SimState) -> web.StreamResponse:
    """`POST /v1/completions`, streamed or not."""
    try:
        body = await request.json()
    except ValueError:
        return json_response({"error": "Invalid JSON body"}, 400)
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        # FastAPI's RequestValidationError, as trtllm-serve's handler words it.
        return json_response({"error": "1 validation error: model Field required"}, 400)
    req = submit_completion(request, state, body, _DEFAULT_MAX_TOKENS)
    head = {
        "id": f"cmpl-{uuid.UUID(int=req.rng.getrandbits(128)).hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body["model"],
    }
    try:
        if req.stream:
            return await _stream(request, state, req, body, head)
        return await _complete(req, head)
    finally:
        state.finish_record(req)


def _usage(req: SimRequest, completion: int) -> dict[str, Any]:
    details = {"cached_tokens": req.cached_tokens}
    return {**completion_usage(req, completion), "prompt_tokens_details": details}


async def _stream(
    request: web.Request,
    state: SimState,
    req: SimRequest,
    body: dict[str, Any],
    head: dict[str, Any],
) -> web.StreamResponse:
    include_usage, continuous = usage_options(body)
    sent = 0
    iterations = 0

    def render(out: StepOut, first: bool) -> list[dict[str, Any]]:
        nonlocal sent, iterations
        text = req.text(out.completion_tokens)[len(req.text(sent)) :]
        sent = out.completion_tokens
        iterations += 1  # one output per iteration, the context one first
        choice = {
            "index": 0,
            "text": text,
            "token_ids": None,
            "logprobs": None,
            "finish_reason": "length" if out.finished else None,
            "stop_reason": None,
            "avg_decoded_tokens_per_iter": out.completion_tokens / iterations,
        }
        usage = _usage(req, out.completion_tokens) if continuous else None
        return [{**head, "choices": [choice], "usage": usage}]

    def tail() -> list[dict[str, Any]]:
        if not include_usage:
            return []
        return [{**head, "choices": [], "usage": _usage(req, req.completion_tokens)}]

    error = {"object": "error", "message": "Simulated mid-stream failure", "type": "Error"}
    return await stream_request(
        request,
        state.engine,
        req,
        state.faults,
        render,
        {**error, "param": None, "code": 500},
        tail,
        over=lambda: state.finish_record(req),
    )


async def _complete(req: SimRequest, head: dict[str, Any]) -> web.StreamResponse:
    if not await until_finished(req):
        return web.Response(status=503)
    choice = {
        "index": 0,
        "text": req.text(),
        "token_ids": None,
        "logprobs": None,
        "context_logits": None,
        "finish_reason": "length",
        "stop_reason": None,
        "disaggregated_params": None,
        "avg_decoded_tokens_per_iter": req.completion_tokens / (1 + len(req.record.step_drafts)),
    }
    usage = _usage(req, req.completion_tokens)
    return json_response({**head, "choices": [choice], "usage": usage, "prompt_token_ids": None})
