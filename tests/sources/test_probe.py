"""The probe, replayed from real SGLang 0.5.17 streams with their timing, and on bad streams."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from unittest.mock import patch

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay import FakeClock, load_capture, replay_transport
from strategies import json_values

from specmon.analysis.figures import run_figures
from specmon.errors import (
    AuthFailed,
    HttpStatus,
    MalformedResponse,
    SpecmonError,
    StreamErrorEvent,
    StreamTruncated,
)
from specmon.sources.probe import generate_payload, parse_chunk, run_probe


def _data_lines(capture: dict) -> list[tuple[float, dict]]:
    """(dispatch time, payload) of each event: SSE dispatches at the blank line that ends it."""
    lines = capture["lines"]
    return [
        (lines[i + 1]["t"], json.loads(line["line"][len("data: ") :]))
        for i, line in enumerate(lines)
        if line["line"].startswith("data: {")
    ]


@pytest.mark.parametrize("name", [f"spec/generate_stream_{i}.json" for i in range(3)])
async def test_replayed_spec_stream_gives_design_figures(name: str) -> None:
    capture = load_capture(name)
    clock = FakeClock(capture["meta"]["t_send"])
    async with httpx.AsyncClient(
        transport=replay_transport(capture, clock), base_url="http://sglang"
    ) as client:
        result = await run_probe(client, max_tokens=128, clock=clock)
    chunks = _data_lines(capture)
    t_send = capture["meta"]["t_send"]
    (t0, first), (t_last, last) = chunks[0], chunks[-1]
    meta = last["meta_info"]
    figures = run_figures(result)
    # Exactly docs/design.md §4, computed independently from the raw capture.
    assert figures.completion_tokens == meta["completion_tokens"] == 128
    assert figures.prompt_tokens == meta["prompt_tokens"]
    assert figures.ttft_ms == pytest.approx(1000 * (t0 - t_send))
    assert figures.e2e_tok_s == pytest.approx(128 / (t_last - t_send))
    decode = 128 - first["meta_info"]["completion_tokens"]
    assert figures.decode_tok_s == pytest.approx(decode / (t_last - t0))
    assert figures.verify_ct == meta["spec_verify_ct"]
    assert figures.accept_length == pytest.approx(decode / meta["spec_verify_ct"])
    assert figures.server_accept_length == pytest.approx(meta["spec_accept_length"])
    assert figures.cycle_ms == pytest.approx(1000 * (t_last - t0) / meta["spec_verify_ct"])
    # One chunk per verify step after the prefill chunk, as the capture shows.
    assert len(result.chunks) == meta["spec_verify_ct"] + 1
    assert figures.cycle_ms_p50 is not None and figures.cycle_ms_p95 is not None
    assert figures.cycle_ms_p50 <= figures.cycle_ms_p95
    # Acceptance by position from 0.5.17's own histogram (steps by drafts accepted).
    histogram = meta["spec_correct_drafts_histogram"]
    assert result.accepted_histogram == tuple(histogram)
    assert figures.position_source == "histogram"
    assert figures.position_steps == sum(histogram) == meta["spec_verify_ct"]
    assert figures.position_accept == pytest.approx(
        [sum(histogram[i + 1 :]) / sum(histogram) for i in range(len(histogram) - 1)]
    )


@pytest.mark.parametrize("name", [f"plain/generate_stream_{i}.json" for i in range(3)])
async def test_replayed_plain_stream_has_no_speculative_figures(name: str) -> None:
    capture = load_capture(name)
    clock = FakeClock(capture["meta"]["t_send"])
    async with httpx.AsyncClient(
        transport=replay_transport(capture, clock), base_url="http://sglang"
    ) as client:
        figures = run_figures(await run_probe(client, max_tokens=128, clock=clock))
    chunks = _data_lines(capture)
    assert figures.completion_tokens == 128
    assert figures.decode_tok_s == pytest.approx(127 / (chunks[-1][0] - chunks[0][0]))
    assert figures.accept_length is None
    assert figures.cycle_ms is None and figures.verify_ct is None
    assert figures.server_accept_length is None


def test_payload_sends_only_known_sampling_params() -> None:
    body = generate_payload("hi", 64)
    assert body["sampling_params"] == {"max_new_tokens": 64, "temperature": 0, "ignore_eos": True}
    assert body["stream"] is True


def _sse(*payloads: str, done: bool = True) -> bytes:
    text = "".join(f"data: {p}\n\n" for p in payloads)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def _chunk(tokens: int, final: bool = False, **meta: object) -> str:
    info: dict[str, object] = {"completion_tokens": tokens, "prompt_tokens": 5}
    info["finish_reason"] = {"type": "length", "length": tokens} if final else None
    info.update(meta)
    return json.dumps({"text": "x", "meta_info": info})


async def _probe(
    body: bytes | AsyncIterator[bytes],
    status: int = 200,
    content_type: str = "text/event-stream",
) -> object:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, content=body)

    async with httpx.AsyncClient(
        transport=httpx.MockTransport(handler), base_url="http://s"
    ) as client:
        return await run_probe(client, max_tokens=8)


async def test_delta_output_ids_do_not_matter_only_completion_tokens() -> None:
    # 0.5.1–0.5.4 sent output_ids as deltas; coalesced chunks jump by several tokens.
    body = _sse(
        json.dumps({"text": "a", "output_ids": [1], "meta_info": {"completion_tokens": 1}}),
        json.dumps({"text": "ab", "output_ids": [2], "meta_info": {"completion_tokens": 4}}),
        _chunk(8, final=True, spec_verify_ct=3),
    )
    result = await _probe(body)
    assert [c.completion_tokens for c in result.chunks] == [1, 4, 8]  # type: ignore[attr-defined]


async def test_mid_stream_error_is_typed() -> None:
    error = json.dumps({"error": {"message": "out of memory", "code": 500}})
    with pytest.raises(StreamErrorEvent, match="out of memory"):
        await _probe(_sse(_chunk(1), error))


async def test_stream_without_final_chunk_is_truncated() -> None:
    with pytest.raises(StreamTruncated, match="2 tokens"):
        await _probe(_sse(_chunk(1), _chunk(2), done=False))


async def test_done_without_final_chunk_is_truncated() -> None:
    with pytest.raises(StreamTruncated):
        await _probe(_sse(_chunk(1), _chunk(2)))


async def test_connection_dropped_mid_stream_is_truncated() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield _sse(_chunk(1), done=False)
        raise httpx.RemoteProtocolError("peer closed connection")

    with pytest.raises(StreamTruncated, match="dropped"):
        await _probe(body())


async def test_sglang_0517_unknown_param_500_is_http_status() -> None:
    with pytest.raises(HttpStatus, match="HTTP 500 Internal Server Error"):
        await _probe(b"Internal Server Error", status=500, content_type="text/plain")


async def test_401_is_auth_failed() -> None:
    with pytest.raises(AuthFailed, match="missing"):
        await _probe(b'{"error":"Unauthorized"}', status=401, content_type="application/json")


async def test_wrong_content_type_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="not an event stream"):
        await _probe(b'{"text": "hi"}', content_type="application/json")


async def test_counter_going_down_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="went down"):
        await _probe(_sse(_chunk(5), _chunk(3, final=True)))


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "[1, 2]",
        '{"text": "x"}',
        '{"meta_info": {"completion_tokens": -1}}',
        '{"meta_info": {"completion_tokens": "3"}}',
        '{"meta_info": {"completion_tokens": true}}',
    ],
)
def test_bad_chunks_are_malformed(payload: str) -> None:
    with pytest.raises(MalformedResponse):
        parse_chunk(payload)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_parse_chunk_never_crashes(payload: str) -> None:
    with contextlib.suppress(SpecmonError):
        parse_chunk(payload)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "completion_tokens",
                "finish_reason",
                "spec_verify_ct",
                "prompt_tokens",
                "spec_accept_length",
            ]
        ),
        json_values,
    )
)
def test_fuzz_meta_info_shapes_never_crash(meta: dict) -> None:
    with contextlib.suppress(SpecmonError):
        parse_chunk(json.dumps({"meta_info": meta}))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
async def test_fuzz_raw_stream_bytes_yield_typed_errors(raw: bytes) -> None:
    with contextlib.suppress(SpecmonError):
        await _probe(raw)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"spec_correct_drafts_histogram": [3, 1, 4]}, (3, 1, 4)),  # 0.5.12+
        ({"spec_accept_histogram": [2, 7]}, (2, 7)),  # 0.5.9-0.5.11
        ({"spec_correct_drafts_histogram": [1, 2], "spec_accept_histogram": [9, 9]}, (1, 2)),
        ({"spec_accept_histogram": [1, -2]}, None),  # not a histogram: none, never a guess
        ({"spec_accept_histogram": [True, 2]}, None),
        ({}, None),  # before 0.5.9: from the stream (analysis.figures)
    ],
)
def test_histogram_of_drafts_accepted_by_version(meta: dict, expected: tuple | None) -> None:
    chunk = {"meta_info": {"completion_tokens": 8, "finish_reason": {"type": "length"}, **meta}}
    assert parse_chunk(json.dumps(chunk)).histogram == expected


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=60) | st.just('"meta_info":{"completion_tokens": 99}}'),
    meta=st.dictionaries(st.sampled_from(["completion_tokens", "finish_reason", "x"]), json_values),
    tail=st.dictionaries(st.sampled_from(["error", "y"]), json_values, max_size=1),
    separators=st.sampled_from([(",", ":"), (", ", ": ")]),
)
def test_meta_info_read_alone_is_what_the_whole_chunk_says(
    text: str, meta: dict, tail: dict, separators: tuple[str, str]
) -> None:
    """SGLang's chunks are read from their closing `meta_info` alone: whatever the text holds
    (its own `"meta_info":` too), an error key after it or spaces, the same as read whole."""
    chunk = json.dumps(
        {"text": text, "output_ids": [1, 2], "meta_info": meta, **tail}, separators=separators
    )
    with patch("specmon.sources.probe._meta_info", return_value=None):  # read whole
        whole = _outcome(lambda: parse_chunk(chunk))
    assert _outcome(lambda: parse_chunk(chunk)) == whole


def _outcome(read: Callable[[], object]) -> str:
    try:
        return repr(read())
    except SpecmonError as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("name", [f"spec/generate_stream_{i}.json" for i in range(3)])
def test_real_chunks_read_alone_and_whole_agree(name: str) -> None:
    for _, payload in _data_lines(load_capture(name)):
        chunk = json.dumps(payload, separators=(",", ":"))
        with patch("specmon.sources.probe._meta_info", return_value=None):
            whole = parse_chunk(chunk)
        assert parse_chunk(chunk) == whole
