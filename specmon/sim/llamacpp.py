"""The simulated llama.cpp `llama-server` (build b1-0c1e570): `/props`, `/slots`, `/v1/models`,
`/metrics` and the native streamed `/completion`.

Shapes of the real capture (tests/fixtures/llamacpp-cpu) and of the server's source:

- `/metrics` (only with `--metrics`, else 501) is hand-written text: `llamacpp:` names, no labels
  but the draft position, values as C++ streams print doubles (6 significant digits). The
  request counters move when a request's slot is released (`n_decode_total`, the target's
  decode calls, at each call); the per-position family appears with the first speculative
  request; the two throughput gauges average over the requests finished since the previous
  scrape (each scrape resets them).
- The stream sends one chunk per token even when a step accepts several drafts, each with the
  cumulative `tokens_predicted`, then a final `"stop": true` chunk whose `timings` carry
  `predicted_n`, `predicted_ms` (first token to last), `draft_n` and `draft_n_accepted`. No
  `[DONE]`.
- `--api-key` guards everything but `/health` and `/v1/health`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from specmon.sim.config import LLAMACPP_BUILD, LLAMACPP_SPECULATIVE_TYPE, SimConfig
from specmon.sim.decode import count_prompt_tokens, token_text
from specmon.sim.engine import Engine, SimRequest, StepOut
from specmon.sim.metrics import CONTENT_TYPE_TEXT
from specmon.sim.sse import json_response, stream_request

if TYPE_CHECKING:
    from specmon.sim.server import SimState

SLOTS = 4
_COUNTERS = (
    ("prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens"),
    ("prompt_tokens_cached_total", "Number of prompt tokens reused from the cache"),
    ("prompt_seconds_total", "Total time spent processing prompts"),
    ("tokens_predicted_total", "Number of generation tokens processed"),
    ("tokens_predicted_seconds_total", "Total time spent generating tokens"),
    (
        "n_decode_total",
        "Total number of llama_decode() calls, excluding speculative decoding and multimodal "
        "decoding",
    ),
    ("n_tokens_max", "Largest observed sequence length (prompt + generation)"),
    ("spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated"),
    (
        "spec_decode_num_accepted_tokens_total",
        "Speculative: Total draft tokens accepted by the target model",
    ),
    ("spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps"),
)
_GAUGES = (
    ("prompt_tokens_seconds", "Average prompt throughput in tokens/s"),
    ("predicted_tokens_seconds", "Average generation throughput in tokens/s"),
    ("requests_processing", "Number of requests processing"),
    ("requests_deferred", "Number of requests deferred"),
    ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call"),
)


def cpp_double(value: float) -> str:
    """A double as `std::ostream << value` prints it (%g, 6 significant digits)."""
    return format(value, "g")


class LlamaCppMetrics:
    """llama.cpp's counters, moved when a request's slot is released (`EngineHooks`)."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.draft_length = config.num_draft_tokens - 1
        self.values = dict.fromkeys((name for name, _ in _COUNTERS), 0.0)
        self.per_pos: list[int] = []  # empty until the first speculative request finishes
        self.bucket = {"prompt_n": 0.0, "prompt_s": 0.0, "predict_steps": 0.0, "predict_s": 0.0}
        self.busy_slots = 0
        self.running = 0
        self.slots_used: set[int] = set()

    def render(self) -> str:
        """The exposition text; like the real server, a scrape resets the throughput bucket."""
        b = self.bucket
        gauges = {
            "prompt_tokens_seconds": b["prompt_n"] / b["prompt_s"] if b["prompt_s"] else 0.0,
            "predicted_tokens_seconds": (
                b["predict_steps"] / b["predict_s"] if b["predict_s"] else 0.0
            ),
            "requests_processing": float(self.running),
            "requests_deferred": 0.0,
            "n_busy_slots_per_decode": self.busy_slots / max(self.values["n_decode_total"], 1.0),
        }
        self.bucket = dict.fromkeys(self.bucket, 0.0)
        lines = []
        for kind, items, values in (
            ("counter", _COUNTERS, self.values),
            ("gauge", _GAUGES, gauges),
        ):
            for name, doc in items:
                lines += [
                    f"# HELP llamacpp:{name} {doc}",
                    f"# TYPE llamacpp:{name} {kind}",
                    f"llamacpp:{name} {cpp_double(values[name])}",
                ]
        if self.per_pos:
            name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
            lines += [f"# HELP {name} Accepted tokens per draft position", f"# TYPE {name} counter"]
            lines += [f'{name}{{position="{i}"}} {n}' for i, n in enumerate(self.per_pos)]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ EngineHooks

    def on_prefill_start(self, batch: list[SimRequest], start: float, end: float) -> None:
        """One llama_decode() call processes the batch's prompts."""
        self.values["n_decode_total"] += 1
        self.busy_slots += len(batch)
        self.running += len(batch)

    def on_first_token(self, req: SimRequest) -> None:
        """Nothing is counted before the slot is released."""

    def on_verify(self, req: SimRequest, drafted: int, accepted: int) -> None:
        """Counted per request, at release (`on_finish`)."""

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
        """One decode call of the target for the batch (the draft model's are not counted)."""
        self.values["n_decode_total"] += 1
        self.busy_slots += batch_size

    def on_output(self, req: SimRequest, interval: float, new_tokens: int) -> None:
        """llama.cpp keeps no inter-token histogram."""

    def on_finish(self, req: SimRequest) -> None:
        """The slot is released: the request's totals join the counters."""
        v, steps = self.values, req.record.step_accepted
        prompt_s = req.prefill_finished - req.forward_entry
        predict_s = req.finished_at - req.first_token
        uncached = req.prompt_tokens - req.cached_tokens
        v["prompt_tokens_total"] += uncached
        v["prompt_tokens_cached_total"] += req.cached_tokens
        v["prompt_seconds_total"] += prompt_s
        v["tokens_predicted_total"] += req.completion_tokens
        v["tokens_predicted_seconds_total"] += predict_s
        v["n_tokens_max"] = max(v["n_tokens_max"], req.prompt_tokens + req.completion_tokens)
        if steps:
            v["spec_decode_num_draft_tokens_total"] += sum(req.record.step_drafted)
            v["spec_decode_num_accepted_tokens_total"] += sum(steps)
            v["spec_decode_num_drafts_total"] += len(steps)
            if not self.per_pos:
                self.per_pos = [0] * self.draft_length
            for accepted in steps:
                for i in range(accepted):
                    self.per_pos[i] += 1
        self.bucket["prompt_n"] += uncached
        self.bucket["prompt_s"] += prompt_s
        self.bucket["predict_steps"] += max(req.completion_tokens - 1, 0)
        self.bucket["predict_s"] += predict_s
        self.running -= 1

    def on_abort(self, req: SimRequest) -> None:
        """The slot is released without totals."""
        if req.forward_entry:  # it had been admitted to a slot
            self.running -= 1


def timings(req: SimRequest) -> dict[str, Any]:
    """The final chunk's `timings` of a finished request."""
    prompt_ms = 1000 * (req.prefill_finished - req.forward_entry)
    predicted_ms = 1000 * (req.finished_at - req.first_token)
    prompt_n = req.prompt_tokens - req.cached_tokens
    steps = max(req.completion_tokens - 1, 0)
    out: dict[str, Any] = {
        "cache_n": req.cached_tokens,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": 1000 * prompt_n / prompt_ms if prompt_ms else 0.0,
        "predicted_n": req.completion_tokens,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / steps if steps else 0.0,
        "predicted_per_second": 1000 * steps / predicted_ms if predicted_ms else 0.0,
    }
    if req.record.step_drafted:  # present only when the request drafted
        out["draft_n"] = sum(req.record.step_drafted)
        out["draft_n_accepted"] = sum(req.record.step_accepted)
    return out


def add_routes(app: web.Application, state: SimState, metrics: LlamaCppMetrics) -> None:
    """llama-server's routes for one server lifetime."""
    cfg = state.config
    n_ctx = cfg.context_length // SLOTS

    async def health(_: web.Request) -> web.StreamResponse:
        return json_response({"status": "ok"})

    async def props(_: web.Request) -> web.StreamResponse:
        return json_response(
            {
                "default_generation_settings": {"params": _params(False), "n_ctx": n_ctx},
                "total_slots": SLOTS,
                "model_alias": cfg.model_name,
                "model_ftype": "all F32",
                "model_path": cfg.model_path,
                "endpoint_slots": True,
                "endpoint_props": False,
                "endpoint_metrics": cfg.enable_metrics,
                "build_info": LLAMACPP_BUILD,
                "is_sleeping": False,
            }
        )

    def _params(used: bool) -> dict[str, Any]:
        types = f"none,{LLAMACPP_SPECULATIVE_TYPE}" if used and cfg.speculative else "none"
        return {"temperature": 0.8, "n_predict": -1, "speculative.types": types}

    async def slots(_: web.Request) -> web.StreamResponse:
        answer = []
        for i in range(SLOTS):
            slot: dict[str, Any] = {
                "id": i,
                "n_ctx": n_ctx,
                "speculative": cfg.speculative,
                "is_processing": False,
            }
            if i in metrics.slots_used:  # a slot shows its params once it has served
                slot["params"] = _params(True)
            answer.append(slot)
        return json_response(answer)

    async def models(_: web.Request) -> web.StreamResponse:
        card = {
            "id": cfg.model_name,
            "aliases": [cfg.model_name],
            "object": "model",
            "created": int(time.time()),
            "owned_by": "llamacpp",
        }
        return json_response({"object": "list", "data": [card]})

    async def render_metrics(_: web.Request) -> web.StreamResponse:
        if not cfg.enable_metrics:
            message = "This server does not support metrics endpoint. Start it with `--metrics`"
            error = {"code": 501, "message": message, "type": "not_supported_error"}
            return json_response({"error": error}, 501)
        return web.Response(text=metrics.render(), headers={"Content-Type": CONTENT_TYPE_TEXT})

    async def completion(request: web.Request) -> web.StreamResponse:
        return await handle_completion(request, state, metrics)

    r = app.router
    for path in ("/health", "/v1/health"):
        r.add_get(path, health)
    r.add_get("/props", props)
    r.add_get("/slots", slots)
    r.add_get("/v1/models", models)
    r.add_get("/metrics", render_metrics)
    for path in ("/completion", "/completions"):
        r.add_post(path, completion)


async def handle_completion(
    request: web.Request, state: SimState, metrics: LlamaCppMetrics
) -> web.StreamResponse:
    """Native `POST /completion` (streamed; the simulator does not answer non-streamed ones)."""
    try:
        body = await request.json()
    except ValueError:
        return json_response({"error": {"code": 400, "message": "Invalid JSON"}}, 400)
    if not isinstance(body, dict) or not body.get("stream"):
        return json_response({"error": {"code": 400, "message": "Only streams here"}}, 400)
    n_predict = body.get("n_predict")
    prompt = body.get("prompt")
    engine = state.engine
    req = engine.new_request(
        endpoint=request.path,
        stream=True,
        prompt_tokens=count_prompt_tokens(prompt) + 1,  # the BOS token
        prompt_key=repr(prompt),
        max_new_tokens=n_predict if isinstance(n_predict, int) and n_predict > 0 else 128,
        stream_interval=None,
        text=prompt if isinstance(prompt, str) else "",
    )
    slot = req.index % SLOTS
    metrics.slots_used.add(slot)
    engine.submit(req)
    sent = 0

    def render(out: StepOut, first: bool) -> list[dict[str, Any]]:
        # One chunk per token, even for the tokens of one verify step.
        nonlocal sent
        chunks = []
        for n in range(sent + 1, out.completion_tokens + 1):
            tid = req.token_ids[n - 1]
            chunks.append(
                {
                    "index": 0,
                    "content": token_text(tid),
                    "tokens": [tid],
                    "stop": False,
                    "id_slot": -1,
                    "tokens_predicted": n,
                    "tokens_evaluated": req.prompt_tokens,
                }
            )
        sent = out.completion_tokens
        return chunks

    def tail() -> list[dict[str, Any]]:
        final = {
            "index": 0,
            "content": "",
            "tokens": [],
            "id_slot": slot,
            "stop": True,
            "model": state.config.model_name,
            "tokens_predicted": req.completion_tokens,
            "tokens_evaluated": req.prompt_tokens,
            "prompt": f"<s>{prompt}",
            "has_new_line": False,
            "truncated": False,
            "stop_type": "limit",
            "stopping_word": "",
            "tokens_cached": req.prompt_tokens + req.completion_tokens - 1,
            "timings": timings(req),
        }
        return [final]

    error = {"error": {"code": 500, "message": "Simulated mid-stream failure", "type": "server"}}
    try:
        return await stream_request(
            request,
            engine,
            req,
            state.faults,
            render,
            error,
            tail,
            done=False,
            over=lambda: state.finish_record(req),
        )
    finally:
        state.finish_record(req)
