"""Native `POST /generate`: request checks, `meta_info` per version, stream and non-stream answers.

Key order and presence follow SGLang's `tokenizer_manager._handle_batch_output` of each version
(0.4.6, 0.5.4, 0.5.23 wheels) and the 0.5.17 capture, which has the same order as 0.5.23 plus the
back-compat aliases `spec_accepted_drafts`, `spec_proposed_drafts`, `spec_accept_histogram`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from specmon.sim.decode import count_prompt_tokens
from specmon.sim.engine import SimRequest, StepOut
from specmon.sim.sse import json_response, stream_request

if TYPE_CHECKING:
    from specmon.sim.server import SimState

# SamplingParams fields of 0.5.23 (`sglang/api/v1/api_types.py`, `_FIELDS_SamplingParams`).
_FIELDS = (
    "max_new_tokens stop stop_token_ids stop_regex temperature top_p top_k min_p frequency_penalty"
    " presence_penalty repetition_penalty min_new_tokens n json_schema regex ebnf structural_tag"
    " ignore_eos skip_special_tokens spaces_between_special_tokens no_stop_trim stream_interval"
    " logit_bias sampling_seed custom_params beam_width watermark choice"
)
SAMPLING_PARAMS = tuple(_FIELDS.split())


def unknown_field_message(key: str) -> str:
    """0.5.23's contract-gate text (serde's `unknown_field` wording)."""
    listed = ", ".join(f"`{f}`" for f in SAMPLING_PARAMS)
    return f"unknown field `{key}`, expected one of {listed}"


def error_chunk(state: SimState, message: str) -> dict[str, Any]:
    """The payload of a mid-stream error (docs/interfaces.md §3.2): richer in 0.5.23."""
    if state.flavor.at_least("0.5.23"):
        return {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "code": 400,
                "retryable": False,
            }
        }
    return {"error": {"message": message}}


def meta_info(
    state: SimState,
    req: SimRequest,
    completion: int,
    *,
    final: bool,
    sent_ts: float | None = None,
    append_sent_ts: float | None = None,
) -> dict[str, Any]:
    """`meta_info` of one output of `req` as the configured version writes it.

    SGLang (0.5.12+) records when it first answered the client: the first stream chunk (or the
    only non-streaming answer) ends with `response_sent_to_client_ts`; a later final chunk
    repeats that time inside its time stats when `--enable-metrics` is on.

    Args:
        state: Server state (version, config, clock).
        req: The request.
        completion: Cumulative completion tokens at this output.
        final: Whether this is the finishing output.
        sent_ts: Unix time of the first answer if it went out before this output.
        append_sent_ts: Unix time to append as `response_sent_to_client_ts` (first answer).
    """
    flavor, cfg, engine = state.flavor, state.config, state.engine
    style = flavor.meta_style
    finish = {"type": "length", "length": completion} if final else None
    meta: dict[str, Any] = {
        "id": req.rid,
        "finish_reason": finish,
        "prompt_tokens": req.prompt_tokens,
    }
    if style != "0.4":
        meta["weight_version"] = "default"
    metrics_on = cfg.enable_metrics
    if style == "0.5.12":
        meta["num_retractions"] = 0
        if metrics_on:
            meta["forward_entry_time"] = engine.wall(req.forward_entry)
            meta["prefill_finished_time"] = engine.wall(req.prefill_finished)
            meta["queue_time"] = req.forward_entry - req.arrival
        meta["reasoning_tokens"] = 0
    meta["completion_tokens"] = completion
    meta["cached_tokens"] = req.cached_tokens
    if style == "0.5.12":
        cached = req.cached_tokens
        if flavor.at_least("0.5.23") and not cached:
            meta["cached_tokens_details"] = None
        else:
            meta["cached_tokens_details"] = {"device": cached, "host": 0}
        meta["dp_rank"] = None
    if final:
        _final_meta(state, req, meta, sent_ts)
    if append_sent_ts is not None and style == "0.5.12":
        meta["response_sent_to_client_ts"] = append_sent_ts
    return meta


def _final_meta(
    state: SimState, req: SimRequest, meta: dict[str, Any], sent_ts: float | None
) -> None:
    flavor, cfg, engine = state.flavor, state.config, state.engine
    e2e = req.finished_at - req.arrival
    style = flavor.meta_style
    spec = cfg.speculative
    if style == "0.4":
        if spec:
            meta["spec_verify_ct"] = req.verify_ct
        meta["e2e_latency"] = e2e
        return
    if style == "0.5.4":
        if spec:
            steps = cfg.speculative_num_steps or 1
            ok = req.verify_ct > 0
            meta["spec_accept_rate"] = req.correct_drafts / (req.verify_ct * steps) if ok else 0.0
            meta["spec_accept_length"] = req.completion_tokens / req.verify_ct if ok else 0
            meta["spec_verify_ct"] = req.verify_ct
        meta["e2e_latency"] = e2e
        return
    meta["e2e_latency"] = e2e
    if spec and req.verify_ct > 0:
        proposed = req.verify_ct * (cfg.num_draft_tokens - 1)
        meta["spec_accept_rate"] = req.correct_drafts / proposed
        meta["spec_accept_length"] = req.completion_tokens / req.verify_ct
        meta["spec_num_correct_drafts"] = req.correct_drafts
        meta["spec_num_proposed_drafts"] = proposed
        meta["spec_verify_ct"] = req.verify_ct
        if flavor.spec_meta_aliases:
            meta["spec_accepted_drafts"] = req.correct_drafts
            meta["spec_proposed_drafts"] = proposed
        meta["spec_correct_drafts_histogram"] = list(req.histogram)
        if flavor.spec_meta_aliases:
            meta["spec_accept_histogram"] = list(req.histogram)
    if cfg.enable_metrics:
        meta["request_received_ts"] = engine.wall(req.arrival)
        if flavor.at_least("0.5.23"):
            meta["first_token_latency"] = req.first_token - req.arrival
        meta["api_server_dispatch_finish_ts"] = engine.wall(req.arrival) + 0.0007
        if sent_ts is not None:
            meta["response_sent_to_client_ts"] = sent_ts
        meta["request_finished_ts"] = engine.wall(req.finished_at)
        decode_s = req.finished_at - req.first_token
        if req.completion_tokens > 1 and decode_s > 0:
            meta["decode_throughput"] = (req.completion_tokens - 1) / decode_s


def output_body(state: SimState, req: SimRequest, completion: int, prev: int) -> dict[str, Any]:
    """`text` and `output_ids` of an output (before `meta_info`)."""
    body: dict[str, Any] = {"text": req.text(completion).lstrip()}
    mode = state.flavor.output_ids
    if mode == "cumulative" or (mode == "delta" and not req.stream):
        body["output_ids"] = req.token_ids[:completion]
    elif mode == "delta":
        # 0.5.1-0.5.4 streaming quirk: only the ids added since the previous chunk.
        body["output_ids"] = req.token_ids[prev:completion]
    return body


async def handle_generate(request: web.Request, state: SimState) -> web.StreamResponse:
    """`POST /generate`."""
    try:
        body = await request.json()
    except ValueError:
        return json_response({"detail": "Invalid JSON body"}, status=400)
    if not isinstance(body, dict):
        return json_response({"detail": "Request body must be a JSON object"}, status=400)
    params = body.get("sampling_params") or {}
    stream = bool(body.get("stream", False))
    if not isinstance(params, dict) or isinstance(body.get("text"), list):
        return json_response({"error": "batched requests are not simulated"}, status=400)
    unknown = [k for k in params if k not in SAMPLING_PARAMS]
    if unknown:
        if state.flavor.unknown_param == "400":
            return json_response({"error": unknown_field_message(unknown[0])}, status=400)
        if not stream:
            return web.Response(
                text="Internal Server Error",
                status=500,
                headers={"Content-Type": "text/plain; charset=utf-8"},
            )
        # The TypeError happens inside the streaming generator, after the 200 headers went out.
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
        await resp.prepare(request)
        if request.transport is not None:
            request.transport.abort()
        return resp
    if body.get("text") is None and body.get("input_ids") is None:
        return json_response({"error": {"message": "text or input_ids is required"}}, status=400)
    text, ids = body.get("text"), body.get("input_ids")
    max_new = params.get("max_new_tokens", 128)
    interval = params.get("stream_interval")
    req = state.engine.new_request(
        endpoint="/generate",
        stream=stream,
        prompt_tokens=count_prompt_tokens(text, ids),
        prompt_key=repr(ids) if text is None else str(text),
        max_new_tokens=max_new if isinstance(max_new, int) else 128,
        stream_interval=interval if isinstance(interval, int) and interval > 0 else None,
        text=text if isinstance(text, str) else "",
    )
    state.engine.submit(req)
    if stream:
        return await _stream(request, state, req)
    return await _non_stream(request, state, req)


async def _stream(request: web.Request, state: SimState, req: SimRequest) -> web.StreamResponse:
    prev = 0
    first_sent: float | None = None

    def render(out: StepOut, first: bool) -> list[dict[str, Any]]:
        nonlocal prev, first_sent
        now = state.engine.wall(state.engine.now())
        payload = output_body(state, req, out.completion_tokens, prev)
        payload["meta_info"] = meta_info(
            state,
            req,
            out.completion_tokens,
            final=out.finished,
            sent_ts=first_sent,
            append_sent_ts=now if first else None,
        )
        if first:
            first_sent = now
        prev = out.completion_tokens
        return [payload]

    error = error_chunk(state, "Simulated mid-stream failure")
    try:
        return await stream_request(
            request,
            state.engine,
            req,
            state.faults,
            render,
            error,
            over=lambda: state.finish_record(req),
        )
    finally:
        state.finish_record(req)


async def _non_stream(request: web.Request, state: SimState, req: SimRequest) -> web.StreamResponse:
    try:
        while True:
            out = await req.outbox.get()
            if out is None:
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=503)
            if out.finished:
                break
        payload = output_body(state, req, req.completion_tokens, 0)
        payload["meta_info"] = meta_info(
            state,
            req,
            req.completion_tokens,
            final=True,
            append_sent_ts=state.engine.wall(state.engine.now()),
        )
        return json_response(payload)
    finally:
        state.finish_record(req)
