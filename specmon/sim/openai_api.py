"""OpenAI-compatible `/v1/completions` and `/v1/chat/completions`: SGLang's, shaped as the 0.5.17
capture (`handle_openai`), and the request reading the vLLM and TensorRT-LLM simulators share.

SGLang's streams carry text deltas, one chunk per engine output; chat opens with a role chunk and
closes with an empty-delta chunk holding `finish_reason`. `stream_options.include_usage` adds a
usage chunk; 0.5.20+ honour `return_spec_tokens_details` with an `sglext` chunk before it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from specmon.sim.decode import count_prompt_tokens
from specmon.sim.engine import SimRequest, StepOut
from specmon.sim.native import error_chunk
from specmon.sim.sse import json_response, stream_request

if TYPE_CHECKING:
    from specmon.sim.server import SimState

_DEFAULT_MAX_TOKENS = {"/v1/completions": 16, "/v1/chat/completions": 128}


def submit_completion(
    request: web.Request, state: SimState, body: dict[str, Any], default_max_tokens: int
) -> SimRequest:
    """A `/v1/completions` body as vLLM and TensorRT-LLM read it, submitted to the engine: a
    text prompt or a list of token ids, `max_tokens` (`default_max_tokens` when it is not a
    positive integer) and `stream`."""
    prompt = body.get("prompt")
    ids = prompt if isinstance(prompt, list) else None
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        max_tokens = default_max_tokens
    req = state.engine.new_request(
        endpoint=request.path,
        stream=bool(body.get("stream", False)),
        prompt_tokens=count_prompt_tokens(None if ids else prompt, ids),
        prompt_key=repr(prompt),
        max_new_tokens=max_tokens,
        stream_interval=None,
        text=prompt if isinstance(prompt, str) else "",
    )
    state.engine.submit(req)
    return req


def usage_options(body: dict[str, Any]) -> tuple[bool, bool]:
    """`stream_options` as vLLM and TensorRT-LLM read it: whether a usage chunk closes the
    stream (`include_usage`), and whether every chunk carries the cumulative usage too
    (`continuous_usage_stats`, only with `include_usage`)."""
    options = body.get("stream_options")
    options = options if isinstance(options, dict) else {}
    include_usage = bool(options.get("include_usage"))
    return include_usage, include_usage and bool(options.get("continuous_usage_stats"))


def completion_usage(req: SimRequest, completion: int) -> dict[str, Any]:
    """vLLM's and TensorRT-LLM's `usage` after `completion` tokens (TensorRT-LLM adds its
    `prompt_tokens_details`)."""
    return {
        "prompt_tokens": req.prompt_tokens,
        "total_tokens": req.prompt_tokens + completion,
        "completion_tokens": completion,
    }


async def until_finished(req: SimRequest) -> bool:
    """Wait for a request's last engine output: False when the server shut down first (the
    caller answers 503)."""
    while True:
        out = await req.outbox.get()
        if out is None:
            return False
        if out.finished:
            return True


def _chat_prompt_tokens(messages: object) -> int:
    if not isinstance(messages, list):
        return 1
    words = sum(count_prompt_tokens(m.get("content")) for m in messages if isinstance(m, dict))
    # The chat template adds role headers around every message (a handful of tokens each).
    return words + 5 * len(messages) + 1


def _chat_text(messages: object) -> str:
    """The last user message: what the model answers, and what its category is read from."""
    if not isinstance(messages, list):
        return ""
    users = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    return next((c for c in reversed(users) if isinstance(c, str)), "")


def _usage(state: SimState, req: SimRequest, chat: bool) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": req.prompt_tokens,
        "total_tokens": req.prompt_tokens + req.completion_tokens,
        "completion_tokens": req.completion_tokens,
    }
    if chat:
        usage["prompt_tokens_details"] = None
    usage["reasoning_tokens"] = 0
    if chat and state.flavor.at_least("0.5.23"):
        usage["completion_tokens_details"] = None
    return usage


def _spec_details(state: SimState, req: SimRequest) -> dict[str, Any]:
    proposed = req.verify_ct * (state.config.num_draft_tokens - 1)
    return {
        "spec_accept_rate": req.correct_drafts / proposed if proposed else 0.0,
        "spec_accept_length": req.completion_tokens / req.verify_ct if req.verify_ct else 0.0,
        "spec_cap_length": 0.0,
        "spec_block_accept_length": 0.0,
        "spec_num_correct_drafts": req.correct_drafts,
        "spec_num_proposed_drafts": proposed,
        "spec_verify_ct": req.verify_ct,
        "spec_correct_drafts_histogram": list(req.histogram),
        "spec_cap_lens_histogram": [],
    }


async def handle_openai(request: web.Request, state: SimState) -> web.StreamResponse:
    """`POST /v1/completions` and `POST /v1/chat/completions`."""
    path = request.path
    chat = path.endswith("/chat/completions")
    try:
        body = await request.json()
    except ValueError:
        return json_response({"detail": "Invalid JSON body"}, status=400)
    if not isinstance(body, dict):
        return json_response({"detail": "Request body must be a JSON object"}, status=400)
    if chat:
        prompt_tokens = _chat_prompt_tokens(body.get("messages"))
        prompt_key = repr(body.get("messages"))
        text = _chat_text(body.get("messages"))
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    else:
        prompt = body.get("prompt")
        ids = (
            prompt if isinstance(prompt, list) and all(isinstance(x, int) for x in prompt) else None
        )
        prompt_tokens = count_prompt_tokens(prompt if ids is None else None, ids)
        prompt_key = repr(prompt)
        text = prompt if isinstance(prompt, str) else ""
        max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        max_tokens = _DEFAULT_MAX_TOKENS[path]
    stream = bool(body.get("stream", False))
    req = state.engine.new_request(
        endpoint=path,
        stream=stream,
        prompt_tokens=prompt_tokens,
        prompt_key=prompt_key,
        max_new_tokens=max_tokens,
        stream_interval=None,
        text=text,
    )
    state.engine.submit(req)
    model = body.get("model") or state.config.model_name
    head = {
        "id": req.rid,
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": int(time.time()),
        "model": model,
    }
    try:
        if stream:
            return await _stream(request, state, req, body, head, chat)
        return await _complete(state, req, head, chat)
    finally:
        state.finish_record(req)


async def _stream(
    request: web.Request,
    state: SimState,
    req: SimRequest,
    body: dict[str, Any],
    head: dict[str, Any],
    chat: bool,
) -> web.StreamResponse:
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    want_details = bool(body.get("return_spec_tokens_details")) and state.flavor.spec_details_chunk
    prev_text = ""

    def render(out: StepOut, first: bool) -> list[dict[str, Any]]:
        nonlocal prev_text
        text = req.text(out.completion_tokens).lstrip()
        delta, prev_text = text[len(prev_text) :], text
        finish = "length" if out.finished else None
        chunks: list[dict[str, Any]] = []
        if not chat:
            choice = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish}
            choice["matched_stop"] = None
            return [{**head, "choices": [choice], "usage": None}]
        if first:
            role = {"reasoning_content": None, "role": "assistant", "content": ""}
            chunks.append(_chat_chunk(head, role, None))
        chunks.append(_chat_chunk(head, {"reasoning_content": None, "content": delta}, None))
        if out.finished:
            chunks.append(_chat_chunk(head, {"reasoning_content": None}, finish))
        return chunks

    def tail() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if want_details and state.config.speculative:
            details = {"spec_tokens_details": _spec_details(state, req)}
            out.append({**head, "choices": [], "usage": None, "sglext": details})
        if include_usage:
            out.append({**head, "choices": [], "usage": _usage(state, req, chat)})
        return out

    error = error_chunk(state, "Simulated mid-stream failure")
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


def _chat_chunk(head: dict[str, Any], delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    choice["matched_stop"] = None
    return {**head, "choices": [choice]}


async def _complete(
    state: SimState, req: SimRequest, head: dict[str, Any], chat: bool
) -> web.StreamResponse:
    if not await until_finished(req):
        return web.Response(status=503)
    text = req.text().lstrip()
    choice: dict[str, Any] = {"index": 0}
    if chat:
        choice["message"] = {
            "role": "assistant",
            "content": text,
            "reasoning_content": None,
            "tool_calls": None,
        }
    else:
        choice["text"] = text
    choice.update(logprobs=None, finish_reason="length", matched_stop=None)
    obj = "chat.completion" if chat else "text_completion"
    return json_response(
        {**head, "object": obj, "choices": [choice], "usage": _usage(state, req, chat)}
    )
