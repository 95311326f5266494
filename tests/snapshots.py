"""Stored snapshots made to measure, as `docs/design.md` §1 tells them: the true baseline (62.9
tok/s), a stale one (90 tok/s) and EAGLE-3 at 75.9 tok/s, accept length 2.1, on one SGLang server.
Shared by the tests of the snapshot table, `snapshots compare` and the category speedups."""

from __future__ import annotations

from collections.abc import Sequence

from specmon.analysis.validity import LifetimeCheck, LifetimeState
from specmon.model import Protocol, RunFigures, ServerInfo, Snapshot, SpecConfig

T0 = 1_750_000_000.0  # 2025-06-15T15:06:40Z
MAX_AGE = 30 * 60.0
ARGS = {"model_path": "org/Big-MoE", "tp_size": 8, "mem_fraction_static": 0.8, "port": 30000}
SPEC_ARGS = {
    **ARGS,
    "speculative_algorithm": "EAGLE3",
    "speculative_num_steps": 2,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 3,
}
PROTOCOL = Protocol(runs=5, warmup=1, max_tokens=500, temperature=0.0, prompt="Explain a CPU.")
# docs/design.md §1: the true baseline (62.9 tok/s, 15.9 ms/token), the stale one it replaced
# (~11 ms/token), and EAGLE-3 at 75.9 tok/s with accept length 2.1 (so a 27.6 ms cycle).
BASELINE_TOK_S = (62.8, 62.9, 63.0, 62.9, 62.85)
STALE_BASELINE_TOK_S = (90.0, 90.1, 90.2, 90.1, 90.05)
SPEC_TOK_S = (75.7, 75.9, 76.1, 75.8, 76.0)
SPEC_ACCEPT = (2.05, 2.1, 2.15, 2.1, 2.08)
SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")


def make_run(tok_s: float, accept: float | None) -> RunFigures:
    """A run of 500 tokens whose figures agree with each other (cycle = accept / tok/s)."""
    cycle = 1000 * accept / tok_s if accept else None
    return RunFigures(
        completion_tokens=500,
        prompt_tokens=21,
        ttft_ms=45.0,
        e2e_s=499 / tok_s + 0.045,
        e2e_tok_s=500 / (499 / tok_s + 0.045),
        decode_tok_s=tok_s,
        accept_length=accept,
        server_accept_length=None if accept is None else accept - 0.02,
        verify_ct=None if accept is None else round(499 / accept),
        cycle_ms=cycle,
        cycle_ms_p50=cycle,
        cycle_ms_p95=None if cycle is None else cycle * 1.2,
    )


def baseline(
    snapshot_id: int,
    *,
    at: float = T0,
    tok_s: Sequence[float] = BASELINE_TOK_S,
    args: dict[str, object] | None = None,
) -> Snapshot:
    return snapshot(snapshot_id, at, None, tuple(make_run(t, None) for t in tok_s), args)


def speculative(
    snapshot_id: int,
    *,
    at: float = T0 + 600,
    accept: Sequence[float] = SPEC_ACCEPT,
    label: str | None = "eagle tuned",
) -> Snapshot:
    runs = tuple(make_run(t, a) for t, a in zip(SPEC_TOK_S, accept, strict=True))
    return snapshot(snapshot_id, at, label, runs, None, SpecConfig("EAGLE3", 2, 1, 3))


def big_moe_server(spec: SpecConfig | None, args: dict[str, object]) -> ServerInfo:
    """The SGLang 0.5.17 server of the design note's session (tp 8, CUDA graphs on, metrics on),
    with speculation `spec` (None: off) and launch `args`."""
    return ServerInfo(
        backend="sglang",
        version="0.5.17",
        model="org/Big-MoE",
        tp_size=8,
        dp_size=1,
        pp_size=1,
        speculative=spec,
        stream_interval=1,
        cuda_graph_disabled=False,
        cuda_graph_max_bs=8,
        metrics_enabled=True,
        args=args,
    )


def snapshot(
    snapshot_id: int,
    at: float,
    label: str | None,
    runs: tuple[RunFigures, ...],
    args: dict[str, object] | None,
    spec: SpecConfig | None = None,
    url: str = "http://10.1.230.174:8000",
) -> Snapshot:
    server = big_moe_server(spec, args if args is not None else (SPEC_ARGS if spec else ARGS))
    return Snapshot(
        created_at=at,
        url=url,
        label=label,
        server=server,
        protocol=PROTOCOL,
        runs=runs,
        id=snapshot_id,
    )
