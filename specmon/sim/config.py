"""What the simulated server is: its launch flags (`SimConfig`) and its version's shapes (`Flavor`).

Version facts come from docs/interfaces.md and the real 0.5.17 capture; every
threshold below names the first release that behaves that way, so one `Flavor` method answers
"does this version do X" for any of the supported versions.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

from specmon.sim.categories import CATEGORIES, DEFAULT_ACCEPT_BY_CATEGORY

SUPPORTED_VERSIONS = ("0.4.6", "0.5.4", "0.5.17", "0.5.23")
# The server kinds the simulator speaks; vLLM and llama.cpp in one shape each, that of the real
# captures in tests/fixtures (vLLM 0.32.0, llama.cpp build b1-0c1e570); TensorRT-LLM's
# `trtllm-serve` as its source reads (sim/trtllm.py: no capture, the version a stand-in for a
# release with the speculative-decoding metrics of PRs #12545 and #12636).
BACKENDS = ("sglang", "vllm", "llamacpp", "trtllm")
VLLM_VERSION = "0.32.0"
LLAMACPP_BUILD = "b1-0c1e570"
LLAMACPP_SPECULATIVE_TYPE = "draft-simple"
"""What a speculating llama.cpp names its speculation (a slot's `speculative.types`): it drafts
with a draft model, whatever `--speculative-algorithm` said."""
TRTLLM_VERSION = "1.4.0"

# An EAGLE-3 draft repository for Llama 3.3 70B as published on the Hugging Face hub.
DEFAULT_DRAFT_MODEL = "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"

PER_REQUEST_SPEC_LEVELS = ("none", "summary", "detailed")
"""vLLM 0.32's `--per-request-spec-decode-metrics` choices (vllm/config/observability.py)."""


@dataclass(frozen=True)
class SimConfig:
    """Launch flags of the simulated server and the numbers of its decode model.

    Fields are named like SGLang server args where one exists; `extra_args` overrides any other
    server arg reported by `/server_info` (for example `{"decode_log_interval": 5}`).

    Attributes:
        backend: The server kind spoken: "sglang" (default), "vllm", "llamacpp" or "trtllm".
        version: SGLang version whose HTTP shapes are spoken (one of `SUPPORTED_VERSIONS`; the
            other backends speak `VLLM_VERSION` and `LLAMACPP_BUILD`).
        host: Address to bind.
        port: Port to bind; 0 picks a free one.
        model_path: `--model-path`.
        served_model_name: `--served-model-name`; defaults to `model_path` as in SGLang.
        tp_size: `--tp-size`.
        dp_size: `--dp-size`.
        pp_size: `--pp-size`.
        speculative_algorithm: `--speculative-algorithm`; None turns speculation off.
        speculative_num_steps: `--speculative-num-steps`.
        speculative_eagle_topk: `--speculative-eagle-topk`.
        speculative_num_draft_tokens: `--speculative-num-draft-tokens` (drafts + 1 per verify).
        speculative_draft_model_path: `--speculative-draft-model-path`.
        enable_metrics: `--enable-metrics` (on here, off in the CLI as in SGLang).
        api_key: `--api-key`; None means no auth.
        ssl_certfile: `--ssl-certfile`: serve HTTPS with this certificate (PEM).
        ssl_keyfile: `--ssl-keyfile`: the certificate's private key (PEM).
        stream_interval: `--stream-interval`.
        random_seed: `--random-seed`; None draws one per launch, as SGLang does.
        extra_args: Any other server arg, reported verbatim.
        plain_step_ms: One decode step without speculation, for a batch of one.
        cycle_ms: One draft+verify cycle with speculation, for a batch of one.
        accept_length: Mean tokens per verify step, bonus token included, at least 1. Above
            what the draft tokens allow (D: every draft accepted) it is clamped to D
            (`accept_length_used`), so one value serves a sweep of draft lengths.
        accept_by_position: a_i, the share of steps whose draft position i is accepted (non
            increasing, one per draft); replaces `accept_length`'s chain of equal odds.
        accept_by_category: The accept length of requests whose prompt reads as one of
            `CATEGORIES` (`sim.categories.classify_prompt`); `accept_length` for the rest, and
            for every request under `accept_by_position`. Clamped to D like `accept_length`.
        ttft_ms: Prefill time of a lone request with a fully cached prompt.
        prefill_ms_per_token: Extra prefill time per uncached prompt token.
        concurrency_slowdown: k in step time x (1 + k (n - 1)) for n running requests.
        seed: Seeds acceptance draws, token text and request ids.
        record_path: Append one JSON line per finished request here (ground truth).
        gpus: Simulated GPUs served at `/gpu-metrics` in dcgm-exporter's names (0: none).
        adaptive_drafts: Adaptive mode: (from batch size, draft length) pairs, ascending; a
            decode step of n running requests drafts the length of the last pair whose batch
            size is at most n (0: no drafting). SGLang's batch-size buckets
            (`--speculative-adaptive-config`, `adaptive_spec_params.py`: the largest key ≤ the
            batch size picks the slot; one candidate step per slot here) and vLLM's Dynamic SD
            ranges (`num_speculative_tokens_per_batch_size`) in one shape. None: the configured
            draft length always.
        per_request_spec_decode_metrics: vLLM's `--per-request-spec-decode-metrics`: "none",
            "summary" or "detailed" (`metrics.speculative_decoding` on each response).
    """

    version: str = "0.5.23"
    backend: str = "sglang"
    host: str = "127.0.0.1"
    port: int = 0
    model_path: str = "meta-llama/Llama-3.3-70B-Instruct"
    served_model_name: str | None = None
    tp_size: int = 8
    dp_size: int = 1
    pp_size: int = 1
    speculative_algorithm: str | None = "EAGLE3"
    speculative_num_steps: int | None = 2
    speculative_eagle_topk: int | None = 1
    speculative_num_draft_tokens: int | None = 3
    speculative_draft_model_path: str | None = DEFAULT_DRAFT_MODEL
    enable_metrics: bool = True
    api_key: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    stream_interval: int = 1
    random_seed: int | None = None
    extra_args: Mapping[str, object] = field(default_factory=dict)
    plain_step_ms: float = 1000 / 62.9
    cycle_ms: float = 27.6
    accept_length: float = 2.1
    accept_by_position: tuple[float, ...] | None = None
    accept_by_category: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_ACCEPT_BY_CATEGORY)
    )
    ttft_ms: float = 45.0
    prefill_ms_per_token: float = 0.05
    concurrency_slowdown: float = 0.08
    seed: int = 0
    record_path: str | None = None
    gpus: int = 0
    adaptive_drafts: tuple[tuple[int, int], ...] | None = None
    per_request_spec_decode_metrics: str = "none"

    def __post_init__(self) -> None:
        if self.per_request_spec_decode_metrics not in PER_REQUEST_SPEC_LEVELS:
            raise ValueError(
                "per_request_spec_decode_metrics must be one of "
                f"{PER_REQUEST_SPEC_LEVELS}, not {self.per_request_spec_decode_metrics!r}"
            )
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose one of {BACKENDS}")
        if self.backend == "trtllm" and self.api_key is not None:
            raise ValueError("api_key: trtllm-serve checks no API key (openai_server.py has none)")
        if self.version not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"unsupported SGLang version {self.version!r}; choose one of {SUPPORTED_VERSIONS}"
            )
        if self.speculative and self.num_draft_tokens < 2:
            raise ValueError("speculative_num_draft_tokens must be at least 2 (one draft + root)")
        by_length = self.accept_by_position is None
        if self.speculative and by_length and self.accept_length < 1.0:
            raise ValueError("accept_length must be at least 1 (the bonus token of each step)")
        unknown = sorted(set(self.accept_by_category) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown prompt category {unknown[0]!r}; choose from {CATEGORIES}")
        if any(not value >= 1.0 for value in self.accept_by_category.values()):
            raise ValueError("accept_by_category values must be at least 1 (the bonus token)")
        rates = self.accept_by_position
        if (
            self.speculative
            and rates is not None
            and (
                len(rates) != self.num_draft_tokens - 1
                or any(not 0 <= r <= 1 for r in rates)
                or any(b > a for a, b in itertools.pairwise(rates))
            )
        ):
            raise ValueError(
                f"accept_by_position needs {self.num_draft_tokens - 1} non-increasing shares "
                "in [0, 1], one per draft position"
            )
        if self.stream_interval < 1:
            raise ValueError("stream_interval must be at least 1")
        if self.adaptive_drafts is not None:
            self._check_adaptive(self.adaptive_drafts)

    def _check_adaptive(self, buckets: tuple[tuple[int, int], ...]) -> None:
        if not self.speculative:
            raise ValueError("adaptive_drafts needs speculation on")
        if self.backend == "llamacpp":
            raise ValueError("adaptive_drafts: llama.cpp has no batch-size draft schedule")
        sizes = [size for size, _ in buckets]
        if not buckets or sizes[0] < 1 or any(b <= a for a, b in itertools.pairwise(sizes)):
            raise ValueError("adaptive_drafts needs batch sizes from 1 up, strictly ascending")
        most = self.num_draft_tokens - 1
        if any(not 0 <= drafts <= most for _, drafts in buckets):
            raise ValueError(
                f"adaptive_drafts: each draft length must be 0..{most} (the configured one)"
            )

    def drafts_at(self, batch_size: int) -> int:
        """Draft tokens a decode step of `batch_size` running requests proposes per request.

        Below the first bucket (and without adaptive mode) the configured draft length.
        """
        drafts = self.num_draft_tokens - 1
        for size, length in self.adaptive_drafts or ():
            if size > batch_size:
                break
            drafts = length
        return drafts

    @property
    def speculative(self) -> bool:
        """Whether speculative decoding is on."""
        return self.speculative_algorithm is not None

    @property
    def num_draft_tokens(self) -> int:
        """Tokens verified per step (drafts + the root); 1 when speculation is off."""
        if not self.speculative:
            return 1
        if self.speculative_num_draft_tokens is not None:
            return self.speculative_num_draft_tokens
        # SGLang resolves an unset value to steps + 1 for topk 1.
        return (self.speculative_num_steps or 1) + 1

    @property
    def accept_length_used(self) -> float:
        """`accept_length`, clamped to the draft tokens: a step yields at most D tokens."""
        return min(self.accept_length, float(self.num_draft_tokens))

    def accept_length_of(self, category: str | None) -> float:
        """The accept length a prompt of `category` gets (None: no category), clamped to D."""
        wanted = self.accept_by_category.get(category or "", self.accept_length)
        return min(wanted, float(self.num_draft_tokens))

    @property
    def model_name(self) -> str:
        """The served name: metric label `model_name` and the `/v1/models` id."""
        return self.served_model_name or self.model_path

    def arg(self, name: str, default: object = None) -> object:
        """A server arg from `extra_args`, else `default`."""
        return self.extra_args.get(name, default)

    @property
    def decode_log_interval(self) -> int:
        """Decode steps between two publications of the scheduler gauges (SGLang: 40)."""
        value = self.arg("decode_log_interval", 40)
        return value if isinstance(value, int) and value > 0 else 40

    @property
    def context_length(self) -> int:
        """The model's context length (Llama 3.x: 131072) unless `context_length` is given."""
        value = self.arg("context_length")
        return value if isinstance(value, int) and value > 0 else 131072

    @property
    def cuda_graph(self) -> bool:
        """Whether decode runs under CUDA graphs (labels `cuda_graph_passes_total{mode}`)."""
        return not bool(self.arg("disable_cuda_graph", False))


def parse_version(version: str) -> tuple[int, ...]:
    """`"0.5.17"` -> `(0, 5, 17)`."""
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class Flavor:
    """The shapes one SGLang version speaks, as yes/no questions."""

    version: str

    @property
    def v(self) -> tuple[int, ...]:
        """The version as a comparable tuple."""
        return parse_version(self.version)

    def at_least(self, version: str) -> bool:
        """Whether this version is `version` or newer."""
        return self.v >= parse_version(version)

    @property
    def server_info_route(self) -> bool:
        """`/server_info` and `/model_info` exist (0.5.6+); `/get_*` exist everywhere."""
        return self.at_least("0.5.6")

    @property
    def ready_route(self) -> bool:
        """`/ready` exists (0.5.20+)."""
        return self.at_least("0.5.20")

    @property
    def flat_internal_state(self) -> bool:
        """0.4.4-0.4.6.post3 merge the scheduler state into the top level of server info."""
        return not self.at_least("0.4.7")

    @property
    def output_ids(self) -> str:
        """How streamed chunks carry `output_ids`: "none", "delta" (0.5.1-0.5.4) or "cumulative"."""
        if not self.at_least("0.5.0"):
            return "none"
        return "delta" if not self.at_least("0.5.5") else "cumulative"

    @property
    def unknown_param(self) -> str:
        """What an unknown sampling param gets: "400" (0.5.23 contract gate) or "500".

        Before the contract gate `SamplingParams(**kwargs)` raises TypeError, which FastAPI turns
        into a plain-text 500 (the 0.5.17 capture; the same code path in 0.4.6 and 0.5.4).
        """
        return "400" if self.at_least("0.5.23") else "500"

    @property
    def tokenizer_engine_type(self) -> bool:
        """Tokenizer metrics carry `engine_type` (0.5.12+)."""
        return self.at_least("0.5.12")

    @property
    def scheduler_labels(self) -> tuple[str, ...]:
        """Label keys of scheduler-side metrics, alphabetical."""
        if self.at_least("0.5.7"):
            return ("engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank")
        if self.at_least("0.4.9"):
            return ("engine_type", "model_name", "pp_rank", "tp_rank")
        return ("engine_type", "model_name")

    @property
    def tokenizer_labels(self) -> tuple[str, ...]:
        """Label keys of tokenizer-side metrics, alphabetical."""
        return ("engine_type", "model_name") if self.tokenizer_engine_type else ("model_name",)

    @property
    def spec_meta_aliases(self) -> bool:
        """Final meta_info repeats `spec_accepted_drafts`/`spec_proposed_drafts` (0.5.12-0.5.20)."""
        return self.at_least("0.5.12") and not self.at_least("0.5.21")

    @property
    def meta_style(self) -> str:
        """The meta_info layout: "0.4" (no weight_version), "0.5.4", or "0.5.12" (current)."""
        if not self.at_least("0.5.0"):
            return "0.4"
        return "0.5.4" if not self.at_least("0.5.12") else "0.5.12"

    @property
    def auth_exempt_ready(self) -> bool:
        """`/ready` is reachable without the API key (0.5.23)."""
        return self.at_least("0.5.23")

    @property
    def spec_details_chunk(self) -> bool:
        """OpenAI streams honour `return_spec_tokens_details` with an `sglext` chunk (0.5.20+)."""
        return self.at_least("0.5.20")

    @property
    def idle_zeroes_throughput(self) -> bool:
        """The ~30 s idle refresh republishes `gen_throughput` as 0 (0.5.1x+; not 0.4.x)."""
        return self.at_least("0.5.9")
