"""What SGLang counts, and when: the simulator's metrics and scheduler statistics.

- Token counters (`prompt_tokens_total`, `generation_tokens_total`, `num_requests_total`,
  `spec_verify_calls_total`) grow when a request finishes, as the tokenizer's
  `observe_one_finished_request` does.
- `realtime_tokens_total{mode="decode"}` and `cuda_graph_passes_total` grow every decode step.
- Scheduler gauges (`gen_throughput`, `spec_accept_length`, `num_running_reqs` ...) are published
  every `decode_log_interval` decode steps over the window since the previous publication.
- `avg_spec_accept_length` in server info is cumulative over the published windows since start or
  the last `/flush_cache`.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from typing import TYPE_CHECKING

from specmon.sim.config import Flavor, SimConfig
from specmon.sim.metric_defs import families_for
from specmon.sim.metrics import MetricStore

if TYPE_CHECKING:
    from specmon.sim.engine import Engine, SimRequest

_G = "sglang:"
_ROUTING_BOUNDS = ("0", "1", "2", "3", "5", "7", "10", "20", "50", "100", "200", "+Inf")
_GRAPH_PHASES: tuple[str, ...] = ("prefill", "decode", "target_verify", "draft_prefill")
_GRAPH_PHASES += ("draft_decode", "draft_extend")
# SGLang zeroes gen_throughput in its idle refresh after this long without decode work.
IDLE_REFRESH_S = 30.0
# KV pool per GPU of a 70B model on an H200; with 40 KiB of KV per token per GPU (80 layers x 8
# KV heads x 128 x K+V x bf16 / TP 8) it holds about 2.3 M tokens.
_KV_GB = 95.0


class Observer:
    """Turns engine events into metric values and scheduler statistics."""

    def __init__(self, config: SimConfig, flavor: Flavor, epoch: int, start_mono: float) -> None:
        self.config = config
        self.flavor = flavor
        self.store = MetricStore(families_for(flavor))
        self.start_mono = start_mono
        self.last_decode_mono = start_mono
        self.last_gen_throughput = 0.0
        self.spec_total_tokens = 0
        self.spec_total_forward = 0
        self._forward_ct = 0
        self._win_tokens = self._win_bs = self._win_correct = 0
        self._last_tick = start_mono
        rng = random.Random(f"startup:{config.seed}:{epoch}")
        # Startup phases differ per launch, as a real restart's do.
        self.startup_phases = {
            "load_weight": round(28.0 + 6 * rng.random(), 6),
            "kv_cache_allocation": round(1.0 + rng.random(), 6),
            "scheduler_e2e": round(55.0 + 10 * rng.random(), 6),
        }
        self.cuda_graph_phases = {p: round(2 * rng.random(), 6) for p in _GRAPH_PHASES}
        self.tokenizer_e2e = round(70.0 + 10 * rng.random(), 6)
        tokens = config.arg("max_total_tokens")
        self.max_total_num_tokens = tokens if isinstance(tokens, int) else 2_320_000
        self._publish_startup()

    # ------------------------------------------------------------------ labels

    def is_streaming(self, req: SimRequest) -> str:
        """The `is_streaming` label value of a request."""
        return "true" if req.stream else "false"

    def base_labels(self) -> dict[str, dict[str, str]]:
        """Base label values per scope for `MetricStore.render`."""
        values = {
            "engine_type": "unified",
            "model_name": self.config.model_name,
            "moe_ep_rank": "0",
            "pp_rank": "0",
            "tp_rank": "0",
        }
        return {
            "S": {k: values[k] for k in self.flavor.scheduler_labels},
            "T": {k: values[k] for k in self.flavor.tokenizer_labels},
        }

    # ------------------------------------------------------------------ startup

    def _publish_startup(self) -> None:
        s = self.store
        s.set(_G + "num_retracted_reqs", 0)
        s.set(_G + "num_paused_reqs", 0)
        s.set(_G + "max_total_num_tokens", self.max_total_num_tokens)
        s.set(_G + "weight_memory_usage_gb", self.weight_gb)
        s.set(_G + "kv_cache_memory_usage_gb", _KV_GB)
        for phase in _GRAPH_PHASES:
            s.set(_G + "graph_memory_usage_gb", 0.4 if "decode" in phase else 0.0, phase=phase)
        s.set(_G + "page_size", 1)
        s.set(_G + "num_pages", self.max_total_num_tokens)
        s.set(_G + "context_len", self.config.context_length)
        s.set(_G + "startup_available_gpu_memory_gb", 131.2)
        for key, seconds in self.startup_phases.items():
            s.set(_G + "startup_time_seconds", seconds, phase=key)
        s.set(_G + "startup_time_seconds", self.tokenizer_e2e, phase="tokenizer_e2e")
        for phase, seconds in self.cuda_graph_phases.items():
            s.set(_G + "startup_cuda_graph_time_seconds", seconds, phase=phase)
        s.set(_G + "engine_startup_time", self.startup_phases["scheduler_e2e"])
        s.set(_G + "engine_load_weights_time", self.startup_phases["load_weight"])
        # Without a warm-up request the first stats publication is the idle refresh: all zero.
        self._publish_stats(
            running=0, queued=0, used=0, throughput=0.0, active_drafts=self.config.drafts_at(1)
        )

    @property
    def weight_gb(self) -> float:
        """Model weights per GPU: a 70B model in bf16 split over TP ranks."""
        return round(141.1 / max(self.config.tp_size, 1), 3)

    def startup_time(self, *, tokenizer: bool) -> dict[str, object]:
        """SGLang 0.5.17+ `startup_time`: phase durations (top level adds `tokenizer_e2e`)."""
        out: dict[str, object] = {**self.startup_phases, "cuda_graph": dict(self.cuda_graph_phases)}
        if tokenizer:
            out["tokenizer_e2e"] = self.tokenizer_e2e
        return out

    def memory_usage(self) -> dict[str, object]:
        """`internal_states[i].memory_usage` (0.5.17 shape)."""
        return {
            "weight": self.weight_gb,
            "kvcache": _KV_GB,
            "startup_available": 131.2,
            "token_capacity": self.max_total_num_tokens,
            "token_capacity_swa": None,
            "graph": {p: (0.4 if "decode" in p else 0.0) for p in _GRAPH_PHASES},
        }

    # ------------------------------------------------------------------ stats

    def _publish_stats(
        self,
        *,
        running: int,
        queued: int,
        used: int,
        throughput: float,
        accept_length: float = 0.0,
        accept_rate: float = 0.0,
        active_drafts: int = 0,
    ) -> None:
        s, cfg = self.store, self.config
        usage = used / self.max_total_num_tokens
        s.set(_G + "num_running_reqs", running)
        s.set(_G + "num_queue_reqs", queued)
        s.set(_G + "num_grammar_queue_reqs", 0)
        s.set(_G + "gen_throughput", throughput)
        s.set(_G + "cache_hit_rate", 0.0)
        s.set(_G + "decode_sum_seq_lens", used)
        for name in ("token_usage", "full_token_usage"):
            s.set(_G + name, round(usage, 2))
        s.set(_G + "num_used_tokens", used)
        s.set(_G + "kv_used_tokens", used)
        s.set(_G + "kv_available_tokens", self.max_total_num_tokens - used)
        s.set(_G + "kv_evictable_tokens", 0)
        zeros = (
            "swa_token_usage mamba_usage swa_available_tokens swa_evictable_tokens swa_used_tokens"
            " mamba_available_tokens mamba_evictable_tokens mamba_used_tokens spec_cap_length"
            " spec_block_accept_length num_prefill_bootstrap_queue_reqs"
            " num_prefill_inflight_queue_reqs num_decode_prealloc_queue_reqs"
            " num_decode_transfer_queue_reqs pending_prealloc_token_usage utilization"
            " num_unique_running_routing_keys num_running_reqs_offline_batch"
            " num_prefill_prealloc_queue_reqs kv_transfer_speed_gb_s kv_transfer_latency_ms"
            " avg_request_queue_latency"
        )
        for name in zeros.split():
            s.set(_G + name, 0)
        s.set(_G + "spec_accept_length", accept_length)
        s.set(_G + "spec_accept_rate", accept_rate)
        spec = cfg.speculative
        steps, draft_tokens = (cfg.speculative_num_steps or 0, cfg.num_draft_tokens)
        if spec and cfg.adaptive_drafts is not None:
            # The last batch's setting (`_active_spec_config_snapshot` in SGLang's
            # scheduler_metrics_mixin.py); adaptive runs topk 1, so draft tokens = steps + 1.
            steps = active_drafts
            draft_tokens = steps + 1
        s.set(_G + "spec_num_steps", steps if spec else 0)
        s.set(_G + "spec_num_draft_tokens", draft_tokens if spec else 0)
        s.set(_G + "fwd_occupancy", math.nan)
        s.set(_G + "new_token_ratio", 0.7)
        s.set(_G + "is_cuda_graph", 1.0 if cfg.cuda_graph else 0.0)
        for gauge in ("routing_key_running_req_count", "routing_key_all_req_count"):
            for gt, le in itertools.pairwise(_ROUTING_BOUNDS):
                s.set(_G + gauge, 0, gt=gt, le=le)
        s.set(_G + "routing_keys_active", 0)

    def _used_tokens(self, engine: Engine) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in engine.running)

    def on_verify(self, req: SimRequest, drafted: int, accepted: int) -> None:
        """SGLang counts verify steps per request when it finishes (`on_finish`), not here."""

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
        """One decode batch step (one draft+verify cycle under speculation) ended at `now`.

        SGLang's scheduler counts every accepted token, `emitted` or past a request's limit.
        """
        s = self.store
        self.last_decode_mono = now
        s.inc(_G + "realtime_tokens_total", tokens, mode="decode")
        mode = "decode_cuda_graph" if self.config.cuda_graph else "decode_none"
        s.inc(_G + "cuda_graph_passes_total", 1, mode=mode)
        self._forward_ct += 1
        self._win_tokens += tokens
        self._win_bs += batch_size
        self._win_correct += correct_drafts
        if self._forward_ct % self.config.decode_log_interval:
            return
        elapsed = now - self._last_tick
        throughput = self._win_tokens / elapsed if elapsed > 0 else 0.0
        accept_length = accept_rate = 0.0
        if self.config.speculative and self._win_bs:
            accept_length = self._win_tokens / self._win_bs
            if self.flavor.at_least("0.5.12"):
                drafts = self._win_bs * (self.config.num_draft_tokens - 1)
                accept_rate = self._win_correct / drafts
            else:
                # 0.5.4-0.5.9: accepted tokens incl. bonus over forward_ct x (num_steps + 1).
                steps = (self.config.speculative_num_steps or 1) + 1
                accept_rate = self._win_tokens / (self._win_bs * steps)
            self.spec_total_tokens += self._win_tokens
            self.spec_total_forward += self._win_bs
        self.last_gen_throughput = throughput
        self._publish_stats(
            running=len(engine.running),
            queued=len(engine.waiting),
            used=self._used_tokens(engine),
            throughput=throughput,
            accept_length=accept_length,
            accept_rate=accept_rate,
            active_drafts=engine.active_drafts,
        )
        self._win_tokens = self._win_bs = self._win_correct = 0
        self._last_tick = now

    def refresh_idle(self, engine: Engine, now: float) -> None:
        """SGLang's idle refresh: after 30 s without decoding, republish with throughput 0."""
        if engine.busy or now - self.last_decode_mono < IDLE_REFRESH_S:
            return
        if not self.flavor.idle_zeroes_throughput:
            return
        self.last_gen_throughput = 0.0
        self.store.set(_G + "gen_throughput", 0.0)
        self.store.set(_G + "num_running_reqs", 0)
        self.store.set(_G + "num_queue_reqs", 0)

    @property
    def avg_spec_accept_length(self) -> float | None:
        """Cumulative accept length over published windows (None before the first one)."""
        if not self.config.speculative or not self.spec_total_forward:
            return None
        return self.spec_total_tokens / self.spec_total_forward

    def on_flush(self) -> None:
        """`/flush_cache` resets the cumulative accept-length and throughput accumulators."""
        self.spec_total_tokens = self.spec_total_forward = 0

    # ------------------------------------------------------------------ requests

    def on_prefill_start(self, batch: list[SimRequest], start: float, end: float) -> None:
        """A prefill batch runs from `start` to `end` (model time)."""
        s = self.store
        s.inc(_G + "cuda_graph_passes_total", 1, mode="prefill_none")
        for req in batch:
            uncached = req.prompt_tokens - req.cached_tokens
            s.inc(_G + "realtime_tokens_total", uncached, mode="prefill_compute")
            s.inc(_G + "realtime_tokens_total", req.cached_tokens, mode="prefill_cache")
            s.observe(_G + "queue_time_seconds", start - req.arrival)
            s.observe(_G + "per_stage_req_latency_seconds", 4e-05, stage="request_process")
            s.observe(_G + "per_stage_req_latency_seconds", end - start, stage="prefill_forward")

    def on_first_token(self, req: SimRequest) -> None:
        """The prefill produced the first token of `req`."""
        ttft = req.first_token - req.arrival
        self.store.observe(
            _G + "time_to_first_token_seconds", ttft, is_streaming=self.is_streaming(req)
        )

    def on_output(self, req: SimRequest, interval: float, new_tokens: int) -> None:
        """An output of `new_tokens` reached the tokenizer `interval` s after the previous one."""
        # SGLang: _sum += interval, bucket(interval / n) += n, so _sum/_count is per token.
        self.store.observe(
            _G + "inter_token_latency_seconds",
            interval,
            bucket_of=interval / new_tokens,
            count=new_tokens,
        )

    def on_finish(self, req: SimRequest) -> None:
        """`req` finished: the tokenizer's observe_one_finished_request."""
        s, streaming = self.store, self.is_streaming(req)
        s.inc(_G + "prompt_tokens_total", req.prompt_tokens, is_streaming=streaming)
        s.inc(_G + "generation_tokens_total", req.completion_tokens, is_streaming=streaming)
        if self.config.speculative:
            s.inc(_G + "spec_verify_calls_total", req.verify_ct)
        s.inc(_G + "num_requests_total", 1, is_streaming=streaming)
        if req.cached_tokens > 0:
            s.inc(_G + "cached_tokens_total", req.cached_tokens, cache_source="device")
        e2e = req.finished_at - req.arrival
        s.observe(_G + "e2e_request_latency_seconds", e2e, is_streaming=streaming)
        s.observe(_G + "prompt_tokens_histogram", req.prompt_tokens)
        s.observe(_G + "uncached_prompt_tokens_histogram", req.prompt_tokens - req.cached_tokens)
        s.observe(_G + "generation_tokens_histogram", req.completion_tokens)
        if req.completion_tokens > 1:
            tpot = (req.finished_at - req.first_token) / (req.completion_tokens - 1)
            s.observe(_G + "request_time_per_output_token_seconds", tpot, is_streaming=streaming)

    def on_abort(self, req: SimRequest) -> None:
        """`req` was aborted (its client went away)."""
        self.store.inc(_G + "num_aborted_requests_total", 1)

    # ------------------------------------------------------------------ http

    def on_http(self, endpoint: str, method: str, status: int | None) -> None:
        """An HTTP request began (`status` None) or ended (`status` set)."""
        s = self.store
        if status is None:
            s.inc(_G + "http_requests_total", 1, endpoint=endpoint, method=method)
            s.inc(_G + "http_requests_active", 1, endpoint=endpoint, method=method)
        else:
            s.inc(_G + "http_requests_active", -1, endpoint=endpoint, method=method)
            s.inc(
                _G + "http_responses_total",
                1,
                endpoint=endpoint,
                method=method,
                status_code=str(status),
            )

    def before_render(self) -> None:
        """Refresh values SGLang samples on a timer (per-component CPU time)."""
        cpu = time.process_time()
        self.store.set(_G + "process_cpu_seconds_total", round(cpu * 0.9, 2), component="tokenizer")
        self.store.set(
            _G + "process_cpu_seconds_total", round(cpu * 0.1, 2), component="detokenizer"
        )
