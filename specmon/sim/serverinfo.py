"""Server info, model info and `/v1/models` payloads, shaped per version.

The argument dicts are package data: 0.5.17's is the real capture's (a few tiny-model launch
choices set back to SGLang defaults, see data/README.md); 0.4.6's and 0.5.4's are the `ServerArgs`
field defaults of those wheels; 0.5.23 reuses 0.5.17's (its resolved dict has the same keys that
matter here). The simulator never reads anything outside its package at run time.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specmon.sim.server import SimState

_DATA_FILE = {
    "0.4.6": "server_args_0_4_6.json",
    "0.5.4": "server_args_0_5_4.json",
    "0.5.17": "server_args_0_5_17.json",
    "0.5.23": "server_args_0_5_17.json",
}


@cache
def _template(version: str) -> dict[str, Any]:
    text = resources.files("specmon.sim").joinpath("data", _DATA_FILE[version]).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def server_args(state: SimState) -> dict[str, Any]:
    """The resolved server args of the running simulator, in SGLang's key order."""
    cfg = state.config
    args = dict(_template(cfg.version)["args"])
    spec = cfg.speculative
    resolved: dict[str, Any] = {
        "model_path": cfg.model_path,
        "tokenizer_path": cfg.model_path,
        "served_model_name": cfg.model_name,
        "tp_size": cfg.tp_size,
        "dp_size": cfg.dp_size,
        "pp_size": cfg.pp_size,
        "host": cfg.host,
        "port": state.port,
        "api_key": cfg.api_key,
        "enable_metrics": cfg.enable_metrics,
        "stream_interval": cfg.stream_interval,
        "random_seed": state.random_seed,
        "speculative_algorithm": cfg.speculative_algorithm,
        "speculative_draft_model_path": cfg.speculative_draft_model_path if spec else None,
        "speculative_num_steps": cfg.speculative_num_steps if spec else None,
        "speculative_eagle_topk": cfg.speculative_eagle_topk if spec else None,
        "speculative_num_draft_tokens": cfg.num_draft_tokens if spec else None,
    }
    for key, value in resolved.items():
        if key in args:
            args[key] = value
    if spec and "speculative_draft_model_path" in args:
        args["speculative_draft_model_path"] = cfg.speculative_draft_model_path
    if cfg.adaptive_drafts is not None:
        # SGLang reads its buckets from a JSON file named here; the simulator has none to name.
        args["speculative_adaptive"] = True
    args.update(cfg.extra_args)
    return args


def launch_command(state: SimState) -> str:
    """The command line a real launch would show (0.5.23 `launch_command`, key NOT redacted)."""
    cfg = state.config
    parts = ["python -m sglang.launch_server", f"--model-path {cfg.model_path}"]
    if cfg.served_model_name:
        parts.append(f"--served-model-name {cfg.served_model_name}")
    parts.append(f"--tp-size {cfg.tp_size}")
    if cfg.dp_size != 1:
        parts.append(f"--dp-size {cfg.dp_size}")
    if cfg.speculative:
        parts.append(f"--speculative-algorithm {cfg.speculative_algorithm}")
        if cfg.speculative_draft_model_path:
            parts.append(f"--speculative-draft-model-path {cfg.speculative_draft_model_path}")
        for flag, value in (
            ("--speculative-num-steps", cfg.speculative_num_steps),
            ("--speculative-eagle-topk", cfg.speculative_eagle_topk),
            ("--speculative-num-draft-tokens", cfg.speculative_num_draft_tokens),
        ):
            if value is not None:
                parts.append(f"{flag} {value}")
    if cfg.enable_metrics:
        parts.append("--enable-metrics")
    if cfg.api_key:
        parts.append(f"--api-key {cfg.api_key}")
    parts.append(f"--host {cfg.host} --port {state.port}")
    return " ".join(parts)


def _internal_state(state: SimState, args: dict[str, Any]) -> dict[str, Any]:
    """One `internal_states[i]`: the args again plus live scheduler state, in each version's
    order (0.5.17: the capture; 0.5.23: `internal_state.py`'s contributors; older: the args,
    `last_gen_throughput`, 0.5.4's `memory_usage`)."""
    cfg, obs, flavor = state.config, state.observer, state.flavor
    template = _template(cfg.version)
    inner = dict(args)
    for key in template.get("internal_only_keys_absent", []):
        inner.pop(key, None)  # custom_sigquit_handler is not serializable there
    inner.update(template.get("internal_overrides", {}))
    if flavor.at_least("0.5.23"):
        inner["world_size"] = cfg.tp_size * cfg.dp_size * cfg.pp_size
        inner["startup_time"] = obs.startup_time(tokenizer=False)
        inner["effective_max_running_requests_per_dp"] = 4096
        inner["last_gen_throughput"] = obs.last_gen_throughput
        inner["memory_usage"] = obs.memory_usage()
        inner["disaggregation_mode"] = "null"
        inner["decode_cuda_graph_bs"] = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160]
        inner["decode_cuda_graph_memory_gb"] = 0.4
    elif flavor.at_least("0.5.17"):
        inner.update(template.get("internal_extra", {}))
        inner["max_speculative_num_draft_tokens"] = cfg.num_draft_tokens if cfg.speculative else 1
        inner["last_gen_throughput"] = obs.last_gen_throughput
        inner["memory_usage"] = obs.memory_usage()
        inner["startup_time"] = obs.startup_time(tokenizer=False)
        inner["effective_max_running_requests_per_dp"] = 4096
    else:
        inner["last_gen_throughput"] = obs.last_gen_throughput
        if flavor.at_least("0.5.4"):
            mem = obs.memory_usage()
            keep = ("weight", "kvcache", "token_capacity")
            inner["memory_usage"] = {**{k: mem[k] for k in keep}, "graph": 0.8}
    avg = obs.avg_spec_accept_length
    if avg is not None:
        inner["avg_spec_accept_length"] = avg
    return inner


def server_info(state: SimState) -> dict[str, Any]:
    """`/server_info` (0.5.6+) and `/get_server_info`."""
    cfg, flavor, obs = state.config, state.flavor, state.observer
    args = server_args(state)
    out: dict[str, Any] = dict(args)
    if flavor.at_least("0.5.23"):
        out["launch_command"] = launch_command(state)
    out["status"] = "ready"
    out["max_total_num_tokens"] = obs.max_total_num_tokens
    out["max_req_input_len"] = cfg.context_length - 6
    inner = _internal_state(state, args)
    if flavor.flat_internal_state:
        # 0.4.4-0.4.6.post3: `{**server_args, **scheduler_info, **internal_state, "version"}`.
        out.update(inner)
    else:
        if flavor.at_least("0.5.17"):
            out["startup_time"] = obs.startup_time(tokenizer=True)
        if flavor.at_least("0.5.23"):
            # 0.5.23 builds {args, launch_command, scheduler_info, kv_events} first.
            out["hicache_object_layout"] = None
            out["kv_events"] = None
        out["internal_states"] = [inner]
    out["version"] = cfg.version
    if flavor.at_least("0.5.17") and "kv_events" not in out:
        out["kv_events"] = None  # 0.5.17 appends it last (the capture)
    if flavor.at_least("0.5.23"):
        out["frontend"] = "python"
    return out


def model_info(state: SimState) -> dict[str, Any]:
    """`/model_info` (0.5.6+) and `/get_model_info`."""
    cfg, flavor = state.config, state.flavor
    out: dict[str, Any] = {"model_path": cfg.model_path}
    if flavor.at_least("0.5.23"):
        out["served_model_name"] = cfg.model_name
    out["tokenizer_path"] = cfg.model_path
    out["is_generation"] = True
    if flavor.at_least("0.5.4"):
        out["preferred_sampling_params"] = None
        out["weight_version"] = "default"
    if flavor.at_least("0.5.23"):
        out.update(
            load_format="auto",
            reasoning_parser=None,
            tool_call_parser=None,
            disaggregation_mode="null",
        )
    if flavor.at_least("0.5.17"):
        out["has_image_understanding"] = False
        out["has_audio_understanding"] = False
        out["model_type"] = "llama"
        out["architectures"] = ["LlamaForCausalLM"]
    return out


def v1_models(state: SimState, created: int) -> dict[str, Any]:
    """`/v1/models`."""
    cfg = state.config
    card: dict[str, Any] = {
        "id": cfg.model_name,
        "object": "model",
        "created": created,
        "owned_by": "sglang",
        "root": cfg.model_name,
    }
    if state.flavor.at_least("0.5.17"):
        card["parent"] = None
    card["max_model_len"] = cfg.context_length
    return {"object": "list", "data": [card]}
