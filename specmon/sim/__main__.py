"""`python -m specmon.sim`: run the simulated SGLang (or vLLM, llama.cpp, TensorRT-LLM) server
until Ctrl-C.

`--backend vllm|llamacpp|trtllm` speaks vLLM 0.32.0, llama.cpp's `llama-server` or TensorRT-LLM's
`trtllm-serve` instead of SGLang (with the same decode model; their draft length is
`--speculative-num-draft-tokens` − 1). Flags
are SGLang's own (`--model-path`, `--tp-size`, `--speculative-*`, `--enable-metrics`,
`--api-key` ...) plus the simulator's knobs (`--sglang-version`, `--plain-step-ms`, `--cycle-ms`,
`--accept-length`, `--ttft-ms`, `--prefill-ms-per-token`, `--concurrency-slowdown`, `--seed`,
`--record`, `--gpus`, `--adaptive-drafts`, `--accept-by-category`). Unlike SGLang, speculation
defaults to the seed's EAGLE3 setup; pass `--speculative-algorithm none` for a baseline
server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence

from specmon.sim.categories import CATEGORIES, DEFAULT_ACCEPT_BY_CATEGORY
from specmon.sim.config import (
    BACKENDS,
    DEFAULT_DRAFT_MODEL,
    LLAMACPP_BUILD,
    LLAMACPP_SPECULATIVE_TYPE,
    PER_REQUEST_SPEC_LEVELS,
    SUPPORTED_VERSIONS,
    TRTLLM_VERSION,
    VLLM_VERSION,
    SimConfig,
)
from specmon.sim.server import SimServer


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (SGLang flag names where SGLang has the flag)."""
    d = SimConfig()
    p = argparse.ArgumentParser(
        prog="python -m specmon.sim",
        description="Simulated SGLang, vLLM, llama.cpp or TensorRT-LLM server (HTTP on loopback, "
        "paced by a model of decode).",
    )
    p.add_argument("--backend", choices=BACKENDS, default=d.backend, help="server kind spoken")
    p.add_argument("--model-path", default=d.model_path)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--tp-size", "--tp", dest="tp_size", type=int, default=d.tp_size)
    p.add_argument("--dp-size", "--dp", dest="dp_size", type=int, default=d.dp_size)
    p.add_argument(
        "--speculative-algorithm",
        default=d.speculative_algorithm,
        help="EAGLE3, EAGLE, NGRAM ...; 'none' turns speculation off",
    )
    p.add_argument("--speculative-num-steps", type=int, default=d.speculative_num_steps)
    p.add_argument("--speculative-eagle-topk", type=int, default=d.speculative_eagle_topk)
    p.add_argument(
        "--speculative-num-draft-tokens", type=int, default=d.speculative_num_draft_tokens
    )
    p.add_argument("--speculative-draft-model-path", default=DEFAULT_DRAFT_MODEL)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--enable-mixed-chunk", action="store_true")
    p.add_argument("--disable-overlap-schedule", action="store_true")
    p.add_argument("--enable-metrics", action="store_true", help="serve /metrics (off, as SGLang)")
    p.add_argument("--api-key", default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--stream-interval", type=int, default=1)
    p.add_argument("--random-seed", type=int, default=None, help="default: drawn per launch")
    p.add_argument("--sglang-version", choices=SUPPORTED_VERSIONS, default=d.version)
    p.add_argument("--plain-step-ms", type=float, default=d.plain_step_ms)
    p.add_argument("--cycle-ms", type=float, default=d.cycle_ms)
    p.add_argument(
        "--accept-length",
        type=float,
        default=d.accept_length,
        help="mean tokens per verify step, bonus included (default %(default)s); above the "
        "draft tokens D it is clamped to D, every draft accepted",
    )
    p.add_argument(
        "--accept-by-position",
        type=_shares,
        metavar="A0,A1,…",
        help="share of steps accepting each draft position (replaces --accept-length)",
    )
    p.add_argument(
        "--accept-by-category",
        type=_by_category,
        default={},
        metavar="CAT=AL,…",
        help="accept length of prompts that read as each category, over the defaults "
        + ", ".join(f"{c}={v:g}" for c, v in DEFAULT_ACCEPT_BY_CATEGORY.items())
        + "; 'none': --accept-length for every prompt. A prompt's category is read from its "
        "text, first match wins: repetitive (repeat, verbatim, copy out), code "
        "(a ``` fence or words like function, implement, python), math (solve, equation, "
        "calculate, or digits joined by an operator), summarisation (summarise, summary, "
        "tl;dr), chat (ends with '?'); other prompts get --accept-length",
    )
    p.add_argument("--ttft-ms", type=float, default=d.ttft_ms)
    p.add_argument("--prefill-ms-per-token", type=float, default=d.prefill_ms_per_token)
    p.add_argument("--concurrency-slowdown", type=float, default=d.concurrency_slowdown)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--record", default=None, metavar="PATH", help="append ground truth as JSONL")
    p.add_argument(
        "--gpus", type=int, default=0, metavar="N", help="serve N simulated H200s at /gpu-metrics"
    )
    p.add_argument(
        "--adaptive-drafts",
        type=_buckets,
        metavar="BS:K,…",
        help="adaptive mode: from batch size BS on, draft K tokens per step (0: no drafting), "
        "e.g. 1:3,8:0 (SGLang's batch-size buckets, vLLM's Dynamic SD ranges)",
    )
    p.add_argument(
        "--per-request-spec-decode-metrics",
        choices=PER_REQUEST_SPEC_LEVELS,
        default="none",
        help="vLLM: each response's metrics.speculative_decoding (summary, or detailed with "
        "the per-step arrays), as vLLM 0.32 launched with this flag",
    )
    return p


def _buckets(text: str) -> tuple[tuple[int, int], ...]:
    try:
        pairs = [part.split(":") for part in text.split(",")]
        return tuple((int(size), int(drafts)) for size, drafts in pairs)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected batch-size:draft-length pairs like 1:3,8:0: {text!r}"
        ) from None


def _shares(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 0.8,0.6: {text!r}") from None


def _by_category(text: str) -> dict[str, float] | None:
    """`code=2.8,chat=1.9` (None for 'none')."""
    if text.strip().lower() == "none":
        return None
    values: dict[str, float] = {}
    for part in text.split(","):
        category, _, value = part.partition("=")
        category = category.strip()
        if category not in CATEGORIES:
            raise argparse.ArgumentTypeError(
                f"unknown category {category!r} in {text!r}; choose from {', '.join(CATEGORIES)}"
            )
        try:
            values[category] = float(value)
        except ValueError:
            values[category] = 0.0  # not a number: told below, as one under 1 is
        if not values[category] >= 1:
            raise argparse.ArgumentTypeError(
                f"expected {category}=<accept length of at least 1>: {part!r}"
            )
    return values


def config_from_args(argv: Sequence[str] | None = None) -> SimConfig:
    """Parse `argv` into a `SimConfig`."""
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        return _config(a)
    except ValueError as exc:
        parser.error(str(exc))


def _config(a: argparse.Namespace) -> SimConfig:
    algorithm = a.speculative_algorithm
    if algorithm is not None and algorithm.lower() in ("", "none"):
        algorithm = None
    return SimConfig(
        backend=a.backend,
        version=a.sglang_version,
        host=a.host,
        port=a.port,
        model_path=a.model_path,
        served_model_name=a.served_model_name,
        tp_size=a.tp_size,
        dp_size=a.dp_size,
        speculative_algorithm=algorithm,
        speculative_num_steps=a.speculative_num_steps,
        speculative_eagle_topk=a.speculative_eagle_topk,
        speculative_num_draft_tokens=a.speculative_num_draft_tokens,
        speculative_draft_model_path=a.speculative_draft_model_path,
        enable_metrics=a.enable_metrics,
        api_key=a.api_key,
        stream_interval=a.stream_interval,
        random_seed=a.random_seed,
        plain_step_ms=a.plain_step_ms,
        cycle_ms=a.cycle_ms,
        accept_length=a.accept_length,
        accept_by_position=a.accept_by_position,
        accept_by_category={}
        if a.accept_by_category is None
        else {**DEFAULT_ACCEPT_BY_CATEGORY, **a.accept_by_category},
        ttft_ms=a.ttft_ms,
        prefill_ms_per_token=a.prefill_ms_per_token,
        concurrency_slowdown=a.concurrency_slowdown,
        seed=a.seed,
        record_path=a.record,
        extra_args=_scheduling_args(a, speculative=algorithm is not None),
        gpus=a.gpus,
        adaptive_drafts=a.adaptive_drafts,
        per_request_spec_decode_metrics=a.per_request_spec_decode_metrics,
    )


def _scheduling_args(a: argparse.Namespace, *, speculative: bool) -> dict[str, object]:
    """The scheduling args as SGLang 0.5.17 resolves them: with speculation an unset
    `max_running_requests` becomes 48 and mixed chunking is off (`speculative_hook.py`); unset
    ones are left to the version's template."""
    args: dict[str, object] = {}
    if a.enable_mixed_chunk:
        args["enable_mixed_chunk"] = not speculative
    if a.disable_overlap_schedule:
        args["disable_overlap_schedule"] = True
    running = 48 if a.max_running_requests is None and speculative else a.max_running_requests
    if running is not None:
        args["max_running_requests"] = running
    if a.mem_fraction_static is not None:
        args["mem_fraction_static"] = a.mem_fraction_static
    return args


def speculation_said(config: SimConfig) -> str:
    """The speculation the start-up line names, as the server itself names it (llama.cpp: its
    draft type, which specmon shows), or "off"."""
    if not config.speculative_algorithm:
        return "off"
    if config.backend == "llamacpp":
        return LLAMACPP_SPECULATIVE_TYPE
    return config.speculative_algorithm


async def serve(config: SimConfig) -> None:
    """Start the server, print its URL, and run until cancelled."""
    server = SimServer(config)
    await server.start()
    spec = speculation_said(config)
    kind = {
        "vllm": f"vLLM {VLLM_VERSION}",
        "llamacpp": f"llama.cpp {LLAMACPP_BUILD}",
        "trtllm": f"TensorRT-LLM {TRTLLM_VERSION}",
    }.get(config.backend, f"SGLang {config.version}")
    print(f"specmon sim: {kind} (speculation {spec}) at {server.url}", flush=True)
    by_length = config.speculative and config.accept_by_position is None
    if by_length and config.accept_length_used < config.accept_length:
        print(
            f"specmon sim: accept length {config.accept_length:g} is more than "
            f"{config.num_draft_tokens} draft tokens allow: every draft is accepted "
            f"({config.accept_length_used:g} tokens per step)",
            flush=True,
        )
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `python -m specmon.sim`."""
    config = config_from_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config))


if __name__ == "__main__":
    main()
