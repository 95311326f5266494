"""Which `/metrics` families each simulated SGLang version exposes, with their help and labels.

0.5.17 is the family list of the real capture (tests/fixtures/sglang-0.5.17/spec/metrics_after),
in its order; 0.5.23 adds the per-request TPOT histogram; 0.5.4 and 0.4.6 come from the metric
definitions in those wheels (`sglang/srt/metrics/collector.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from specmon.sim.config import Flavor

# Scopes: which base labels a family gets. "S" = scheduler (model_name, engine_type, ranks),
# "T" = tokenizer (model_name[, engine_type]), "" = none.
SCHED, TOK, NONE = "S", "T", ""


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split())


TTFT_BUCKETS = _floats("0.1 0.2 0.4 0.6 0.8 1 2 4 6 8 10 20 40 60 80 100 200 400")
ITL_BUCKETS = _floats(
    "0.002 0.004 0.006 0.008 0.01 0.015 0.02 0.025 0.03 0.035 0.04 0.06 0.08 0.1 0.2 0.4 0.6 0.8"
    " 1 2 4 6 8"
)
E2E_BUCKETS_046 = (*TTFT_BUCKETS, 800.0)
E2E_BUCKETS = (*TTFT_BUCKETS, 600.0, 1200.0, 1800.0, 2400.0)
_QUEUE_TAIL = (
    " 0.1 0.2 0.5 1 2 3 4 5 10 15 20 30 40 50 60 70 80 90 100 200 300 400 500 600 700 800 900"
    " 1000 1200 1400 1600 1800 2000 2500 3000"
)
QUEUE_BUCKETS_054 = _floats("0.0" + _QUEUE_TAIL)
QUEUE_BUCKETS = _floats("0.0 0.001 0.005 0.01 0.05" + _QUEUE_TAIL)
STAGE_BUCKETS = tuple(0.001 * (1.62**i) for i in range(30))  # SGLang's exponential_buckets
TOKEN_COUNT_BUCKETS = _floats(
    "100 300 500 700 1000 1500 2000 3000 4000 5000 6000 7000 8000 9000 10000 12500 15000 17500"
    " 20000 22500 25000 27500 30000 35000 40000 60000 80000 100000 200000 300000 400000 600000"
    " 800000 1000000 1100000"
)


@dataclass(frozen=True)
class Family:
    """One metric family as exposed.

    Attributes:
        name: Exposed name in the text format (counters end in `_total`).
        kind: "gauge", "counter" or "histogram".
        help: The `# HELP` text.
        scope: Base label set: SCHED, TOK or NONE.
        labels: Extra label keys beyond the scope's (e.g. `mode`, `is_streaming`).
        pid: Multiprocess mode "all": every sample gets the writer's `pid`.
        buckets: Histogram upper bounds, `+Inf` implied.
    """

    name: str
    kind: str
    help: str
    scope: str
    labels: tuple[str, ...] = ()
    pid: bool = False
    buckets: tuple[float, ...] = ()


def _g(name: str, help_: str, scope: str = SCHED, *labels: str, pid: bool = False) -> Family:
    return Family("sglang:" + name, "gauge", help_, scope, labels, pid)


def _c(name: str, help_: str, scope: str, *labels: str) -> Family:
    return Family("sglang:" + name, "counter", help_, scope, labels)


def _h(name: str, help_: str, scope: str, buckets: tuple[float, ...], *labels: str) -> Family:
    return Family("sglang:" + name, "histogram", help_, scope, labels, buckets=buckets)


_RUNNING = "The number of running requests."
_QUEUE = "The number of requests in the waiting queue."
_THROUGHPUT = "The generation throughput (token/s)."
_USED = "The number of used tokens."
_HIT = "The prefix cache hit rate."
_PROMPT = "Number of prefill tokens processed."
_GEN = "Number of generation tokens processed."
_REQS = "Number of requests processed."
_TTFT = "Histogram of time to first token in seconds."
_ITL = "Histogram of inter-token latency in seconds."
_E2E = "Histogram of End-to-end request latency in seconds"
_QTIME = "Histogram of queueing time in seconds."
_CUDA = "Whether the batch is using CUDA graph."
_RETRACTED = "The number of retracted requests."
_PAUSED = "The number of paused requests by async weight sync."
_KV = "the KV cache pool."

_F_0_5_17 = (
    _g("num_retracted_reqs", _RETRACTED, pid=True),
    _g("num_paused_reqs", _PAUSED, pid=True),
    _g("max_total_num_tokens", "Maximum total number of tokens in " + _KV),
    _g("weight_memory_usage_gb", "Memory used by model weights in GB."),
    _g("kv_cache_memory_usage_gb", "Memory used by the KV cache pools in GB."),
    _g("graph_memory_usage_gb", "Memory used by captured device graphs in GB.", SCHED, "phase"),
    _g("page_size", "KV cache page size in tokens."),
    _g("num_pages", "Number of KV cache pages."),
    _g("context_len", "Maximum context length."),
    _g("startup_available_gpu_memory_gb", "Available GPU memory in GB at startup."),
    _g("num_running_reqs", _RUNNING),
    _g("num_queue_reqs", _QUEUE),
    _g("num_grammar_queue_reqs", "The number of requests in the grammar waiting queue."),
    _g("gen_throughput", _THROUGHPUT),
    _g("cache_hit_rate", _HIT),
    _g("decode_sum_seq_lens", "The sum of all sequence lengths in decode."),
    _g("token_usage", "The token usage."),
    _g("full_token_usage", "The token usage for full attention layers."),
    _g("swa_token_usage", "The token usage for SWA layers."),
    _g("mamba_usage", "The token usage for Mamba layers."),
    _g("num_used_tokens", _USED),
    _g("kv_available_tokens", "Number of free token slots in " + _KV),
    _g("kv_evictable_tokens", "Number of evictable (radix-cached) token slots in " + _KV),
    _g("kv_used_tokens", "Number of actively used token slots in " + _KV),
    _g("swa_available_tokens", "Number of free token slots in the SWA pool (hybrid-SWA only)."),
    _g("swa_evictable_tokens", "Number of evictable (radix-cached) token slots in the SWA pool."),
    _g("swa_used_tokens", "Number of actively used token slots in the SWA pool."),
    _g(
        "mamba_available_tokens",
        "Number of free state slots in the mamba SSM pool (hybrid-SSM only).",
    ),
    _g(
        "mamba_evictable_tokens",
        "Number of evictable (radix-cached) state slots in the mamba SSM pool.",
    ),
    _g("mamba_used_tokens", "Number of actively used state slots in the mamba SSM pool."),
    _g(
        "spec_accept_length",
        "Mean acceptance length of speculative decoding"
        " (accepted drafts + bonus token per forward).",
    ),
    _g(
        "spec_accept_rate",
        "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
    ),
    _g(
        "spec_cap_length",
        "Mean DSpark confidence-scheduled verify window per verify step, incl the bonus slot"
        " (0 when no cap is scheduled).",
    ),
    _g(
        "spec_block_accept_length",
        "Mean uncapped full-block accept length per verify step (accept + cap-trimmed drafts;"
        " exact only in DSpark cap-accept mode).",
    ),
    _g("spec_num_steps", "Currently active speculative_num_steps."),
    _g(
        "spec_num_draft_tokens",
        "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
    ),
    _g(
        "num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue."
    ),
    _g("num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue."),
    _g("num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue."),
    _g("num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue."),
    _g(
        "pending_prealloc_token_usage",
        "The token usage for pending preallocated tokens (not preallocated yet).",
    ),
    _g("utilization", "The utilization."),
    _g("fwd_occupancy", "Forward pass GPU occupancy percentage."),
    _g("new_token_ratio", "The new token ratio."),
    _g("is_cuda_graph", _CUDA),
    _g("num_unique_running_routing_keys", "Number of unique routing keys in running batch."),
    _g(
        "routing_key_running_req_count",
        "Distribution of routing keys by running request count (gt < count <= le).",
        SCHED,
        "gt",
        "le",
    ),
    _g(
        "routing_key_all_req_count",
        "Distribution of routing keys by running+waiting request count (gt < count <= le).",
        SCHED,
        "gt",
        "le",
    ),
    _h(
        "per_stage_req_latency_seconds",
        "The latency of each stage of requests.",
        SCHED,
        STAGE_BUCKETS,
        "stage",
    ),
    _h("queue_time_seconds", _QTIME, SCHED, QUEUE_BUCKETS),
    _g("routing_keys_active", "Number of unique routing keys with active requests", NONE),
    _g(
        "http_requests_active",
        "Number of currently active HTTP requests",
        NONE,
        "endpoint",
        "method",
    ),
    _c(
        "process_cpu_seconds_total",
        "Total CPU time consumed by this process (user + system)",
        NONE,
        "component",
    ),
    _c(
        "http_requests_total",
        "Total number of HTTP requests by endpoint and method",
        NONE,
        "endpoint",
        "method",
    ),
    _c(
        "http_responses_total",
        "Total number of HTTP responses by endpoint and status code",
        NONE,
        "endpoint",
        "method",
        "status_code",
    ),
    _c("prompt_tokens_total", _PROMPT, TOK, "is_streaming"),
    _c("generation_tokens_total", _GEN, TOK, "is_streaming"),
    _c("spec_verify_calls_total", "Number of speculative decoding verification calls.", TOK),
    _c("num_requests_total", _REQS, TOK, "is_streaming"),
    _c(
        "cached_tokens_total",
        "Number of cached prompt tokens by source (device/host/storage).",
        TOK,
        "cache_source",
    ),
    _c("num_aborted_requests_total", "Number of requests aborted.", TOK),
    _g("startup_time_seconds", "Engine startup duration by phase in seconds.", TOK, "phase"),
    _g(
        "startup_cuda_graph_time_seconds",
        "CUDA graph capture duration by phase in seconds.",
        TOK,
        "phase",
    ),
    _c(
        "cuda_graph_passes_total",
        "Total number of forward passes categorized by CUDA graph.",
        SCHED,
        "mode",
    ),
    _c(
        "realtime_tokens_total",
        "Total number of tokens processed (updated on each log interval)."
        " mode: prefill_compute, prefill_cache, decode.",
        SCHED,
        "mode",
    ),
    _h("time_to_first_token_seconds", _TTFT, TOK, TTFT_BUCKETS, "is_streaming"),
    _h("e2e_request_latency_seconds", _E2E, TOK, E2E_BUCKETS, "is_streaming"),
    _h("prompt_tokens_histogram", "Histogram of prompt token length.", TOK, TOKEN_COUNT_BUCKETS),
    _h(
        "uncached_prompt_tokens_histogram",
        "Histogram of uncached (compute) prompt token length.",
        TOK,
        TOKEN_COUNT_BUCKETS,
    ),
    _h(
        "generation_tokens_histogram",
        "Histogram of generation token length.",
        TOK,
        TOKEN_COUNT_BUCKETS,
    ),
    _h("inter_token_latency_seconds", _ITL, TOK, ITL_BUCKETS),
)

_F_0_5_23 = (
    *_F_0_5_17,
    _h(
        "request_time_per_output_token_seconds",
        "Per-request TPOT in seconds: (finished_time - first_token_time)"
        " / (completion_tokens - 1).",
        TOK,
        ITL_BUCKETS,
        "is_streaming",
    ),
)

_SPEC_054 = "The average acceptance length of speculative decoding."
_RATE_054 = (
    "The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens`"
    " in batch)."
)
_F_0_5_4 = (
    _g("num_running_reqs", _RUNNING),
    _g("num_used_tokens", _USED),
    _g("token_usage", "The token usage."),
    _g(
        "pending_prealloc_token_usage",
        "The token usage for pending preallocated tokens (not preallocated yet).",
    ),
    _g("swa_token_usage", "The token usage for SWA layers."),
    _g("gen_throughput", _THROUGHPUT),
    _g("num_queue_reqs", _QUEUE),
    _g("num_grammar_queue_reqs", "The number of requests in the grammar waiting queue."),
    _g(
        "num_running_reqs_offline_batch",
        "The number of running low-priority offline batch requests(label is 'batch').",
    ),
    _g("cache_hit_rate", _HIT),
    _g("spec_accept_length", _SPEC_054),
    _g("spec_accept_rate", _RATE_054),
    _g("num_retracted_reqs", _RETRACTED, pid=True),
    _g("num_paused_reqs", _PAUSED, pid=True),
    _g("num_prefill_prealloc_queue_reqs", "The number of requests in the prefill prealloc queue."),
    _g("num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue."),
    _g("num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue."),
    _g("num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue."),
    _g("kv_transfer_speed_gb_s", "The transfer speed of the KV cache in GB/s."),
    _g("kv_transfer_latency_ms", "The transfer latency of the KV cache in ms."),
    _g("utilization", "The utilization."),
    _g("engine_startup_time", "The time taken for the engine to start up."),
    _g("engine_load_weights_time", "The time taken for the engine to load weights."),
    _h("queue_time_seconds", _QTIME, SCHED, QUEUE_BUCKETS_054),
    _g("is_cuda_graph", _CUDA),
    _c("prompt_tokens_total", _PROMPT, TOK),
    _c("generation_tokens_total", _GEN, TOK),
    _c("cached_tokens_total", "Number of cached prompt tokens.", TOK),
    _c("num_requests_total", _REQS, TOK),
    _c("num_aborted_requests_total", "Number of requests aborted.", TOK),
    _h("time_to_first_token_seconds", _TTFT, TOK, TTFT_BUCKETS),
    _h("inter_token_latency_seconds", _ITL, TOK, ITL_BUCKETS),
    _h("e2e_request_latency_seconds", _E2E, TOK, E2E_BUCKETS),
)

_F_0_4_6 = (
    _g("num_running_reqs", _RUNNING),
    _g("num_used_tokens", _USED),
    _g("token_usage", "The token usage."),
    _g("gen_throughput", _THROUGHPUT),
    _g("num_queue_reqs", _QUEUE),
    _g("cache_hit_rate", _HIT),
    _g("spec_accept_length", _SPEC_054),
    _g(
        "avg_request_queue_latency",
        "The average request queue latency for the last batch of requests in seconds.",
    ),
    _c("prompt_tokens_total", _PROMPT, TOK),
    _c("generation_tokens_total", _GEN, TOK),
    _c("cached_tokens_total", "Number of cached prompt tokens.", TOK),
    _c("num_requests_total", _REQS, TOK),
    _h("time_to_first_token_seconds", _TTFT, TOK, TTFT_BUCKETS),
    _h("inter_token_latency_seconds", _ITL, TOK, ITL_BUCKETS),
    _h("e2e_request_latency_seconds", _E2E, TOK, E2E_BUCKETS_046),
)

_BY_VERSION = {"0.4.6": _F_0_4_6, "0.5.4": _F_0_5_4, "0.5.17": _F_0_5_17, "0.5.23": _F_0_5_23}


def families_for(flavor: Flavor) -> tuple[Family, ...]:
    """The families `flavor`'s version defines, in exposition order.

    Families that only one speculative build would touch are kept: like SGLang, a family is
    exposed once something has written to it, so absence still says "never observed".
    """
    return _BY_VERSION[flavor.version]
