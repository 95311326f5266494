"""SGLang server info, from `/server_info` (0.5.6+) or `/get_server_info` (all versions).

Shapes normalised here (docs/interfaces.md §2.2 and the 0.5.17 capture):
0.3.6–0.4.3 flat args; 0.4.4–0.4.6.post3 internal state merged flat into the top level;
0.4.6.post4+ `internal_states: [ {...} ]`, one per DP rank (0.5.17 repeats every arg there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from specmon.backend_facts import SGLANG
from specmon.errors import HttpStatus, MalformedResponse, NotSGLang
from specmon.model import ServerInfo, ServerMetrics, SpecConfig
from specmon.sources.http import get, json_float, json_int, parse_json

# Its reader's three functions (`backend_facts.BackendPlugin.source`): the `sglang:` metrics of
# `sources.metrics`, which every version's names go through, and the OpenAI streaming probe.
from specmon.sources.metrics import fetch_metrics as fetch_metrics
from specmon.sources.probe import run_probe as run_probe
from specmon.sources.secrets import mask_args

# Keys of the answer that describe the running state, not the configuration.
RUNTIME_KEYS = frozenset(
    {
        "internal_states",
        "version",
        "status",
        "startup_time",
        "last_gen_throughput",
        "avg_spec_accept_length",
        "memory_usage",
        "step_time_dict",
        "kv_events",
        "frontend",
        "effective_max_running_requests_per_dp",
        "world_size",
    }
)


async def fetch_server_info(
    client: httpx.AsyncClient, *, scrape: ServerMetrics | None = None
) -> ServerInfo:
    """Read and normalise server info, trying `/server_info` then `/get_server_info`.

    Args:
        client: The server's client.
        scrape: Not used: SGLang's info is a route of its own (`Backend.server_info`'s shape).

    Raises:
        NotSGLang: Neither route exists.
        SourceError: Any other failure, typed (auth, unreachable, malformed …).
    """
    for route in ("/server_info", "/get_server_info"):
        try:
            response = await get(client, route)
        except HttpStatus as exc:
            if exc.status in (404, 405):
                continue
            raise
        body = parse_json(response)
        if not isinstance(body, dict):
            raise MalformedResponse(f"{client.base_url}{route}: expected a JSON object")
        # vLLM's dev-mode route (VLLM_SERVER_DEV_MODE=1); TensorRT-LLM's, for RL frameworks
        # (`{"disaggregated_params": …}`, openai_server.py `get_server_info`).
        for foreign in ("vllm_config", "disaggregated_params"):
            if foreign in body:
                raise NotSGLang(f"{client.base_url}{route}: another server's info, not SGLang's")
        return parse_server_info(body, route)
    raise NotSGLang(
        f"{client.base_url}: no /server_info or /get_server_info — not an SGLang server"
    )


def _float(value: Any) -> float | None:
    return json_float(value)  # NaN, infinities, 1e308, 400-digit integers: unknown


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _states(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    states = body.get("internal_states")
    if isinstance(states, list):
        return [s for s in states if isinstance(s, dict)]
    return [body]  # 0.4.4–0.4.6.post3: merged flat into the top level


def parse_server_info(body: Mapping[str, Any], route: str = "/server_info") -> ServerInfo:
    """Normalise one server-info answer of any SGLang version into a ServerInfo."""
    states = _states(body)
    throughputs = [v for s in states if (v := _float(s.get("last_gen_throughput"))) is not None]
    accepts = [v for s in states if (v := _float(s.get("avg_spec_accept_length"))) is not None]
    args = mask_args({k: v for k, v in body.items() if k not in RUNTIME_KEYS})
    algorithm = _str(body.get("speculative_algorithm"))
    speculative = None
    if algorithm is not None and algorithm.upper() != "NONE":
        speculative = SpecConfig(
            algorithm=algorithm,
            num_steps=json_int(body.get("speculative_num_steps")),
            eagle_topk=json_int(body.get("speculative_eagle_topk")),
            num_draft_tokens=json_int(body.get("speculative_num_draft_tokens")),
            draft_model_path=_str(body.get("speculative_draft_model_path")),
        )
    max_bs = body.get("cuda_graph_max_bs", body.get("cuda_graph_max_bs_decode"))
    return ServerInfo(
        backend=SGLANG.name,
        version=_str(body.get("version")),
        model=_str(body.get("served_model_name")) or _str(body.get("model_path")),
        tp_size=json_int(body.get("tp_size")),
        dp_size=json_int(body.get("dp_size")),
        pp_size=json_int(body.get("pp_size")),
        speculative=speculative,
        stream_interval=json_int(body.get("stream_interval")),
        cuda_graph_disabled=_bool(body.get("disable_cuda_graph")),
        cuda_graph_max_bs=json_int(max_bs),
        metrics_enabled=_bool(body.get("enable_metrics")),
        args=args,
        last_gen_throughput=sum(throughputs) if throughputs else None,
        avg_spec_accept_length=sum(accepts) / len(accepts) if accepts else None,
        info_route=route,
    )
