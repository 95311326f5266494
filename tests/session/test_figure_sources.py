"""What the `i` screen says of where a probe's acceptance came from."""

from __future__ import annotations

from dataclasses import replace

from specmon.backend_facts import LLAMACPP
from specmon.model import AcceptSource, PositionSource, RunFigures
from specmon.session.figure_sources import (
    ALONE,
    NO_ACCEPT,
    PER_REQUEST,
    probe_figure_sources,
)

RUN = RunFigures(
    completion_tokens=128,
    prompt_tokens=70,
    ttft_ms=20.0,
    e2e_s=1.0,
    e2e_tok_s=128.0,
    decode_tok_s=130.0,
    accept_length=1.9,
    server_accept_length=2.8,
    verify_ct=67,
    cycle_ms=15.0,
    cycle_ms_p50=15.0,
    cycle_ms_p95=20.0,
)


def test_per_request_details_are_named() -> None:
    run = replace(
        RUN,
        position_source=PositionSource.DRAFTING_HISTOGRAM,
        server_accept_source=AcceptSource.DETAILS,
    )
    assert probe_figure_sources(run, "vllm") == (
        ("acceptance by position", PER_REQUEST),
        ("server accept length", PER_REQUEST),
    )


def test_without_details_the_counters_path_says_so_and_how_to_get_them() -> None:
    run = replace(
        RUN, position_source=PositionSource.COUNTERS, server_accept_source=AcceptSource.COUNTERS
    )
    rows = dict(probe_figure_sources(run, "vllm"))
    assert rows["acceptance by position"] == rows["server accept length"] == ALONE
    assert "--per-request-spec-decode-metrics" in rows["per-request details"]
    shared = replace(
        run,
        position_source=PositionSource.CHUNKS,
        server_accept_length=None,
        server_accept_source=None,
    )
    rows = dict(probe_figure_sources(shared, "llamacpp"))
    assert rows["acceptance by position"].startswith("the stream's chunks")
    assert rows["server accept length"] == NO_ACCEPT
    assert rows["per-request details"] == LLAMACPP.details_off


def test_nothing_before_a_speculative_probe() -> None:
    assert probe_figure_sources(None, "vllm") == ()
    assert probe_figure_sources(replace(RUN, verify_ct=None), "vllm") == ()
