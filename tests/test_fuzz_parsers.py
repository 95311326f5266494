"""Fuzzing the parsers that are not fuzzed beside their own tests: DCGM text, vLLM's and
llama.cpp's metrics, stream chunks and server info, the config file and the environment, and
stored snapshot records (damaged, of an older or a newer shape). Each gives its value or a typed
error; nothing else escapes. (SGLang's metrics, server info and streams: tests/sources.)"""

from __future__ import annotations

import contextlib
import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from factories import a_run, server_info
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import exposition_lines, json_values

from specmon.config import ENV_PREFIX, SETTINGS, load_config
from specmon.errors import SpecmonError, TargetError
from specmon.model import Protocol, Snapshot
from specmon.sources import dcgm
from specmon.sources.backends import llamacpp, vllm
from specmon.storage.serialize import RecordError, snapshot_from_record, snapshot_to_record
from specmon.storage.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
FUZZ = settings(max_examples=100, deadline=None)


@FUZZ
@given(
    exposition_lines(
        [
            dcgm.GPU_UTIL,
            dcgm.FB_USED,
            dcgm.POWER_USAGE,
            dcgm.SM_CLOCK,
            dcgm.CLOCKS_EVENT_REASONS,
            dcgm.GPU_PROCESS_INFO,
            dcgm.GPU_ERROR,
            dcgm.SERVER_PROCESS_INFO,
            dcgm.HOST_MEMORY_TOTAL,
        ]
    )
)
def test_dcgm_text(lines: list[str]) -> None:
    with contextlib.suppress(SpecmonError):
        dcgm.telemetry_from_text("".join(lines), "http://gpu-box:9400/metrics")


@FUZZ
@given(
    exposition_lines(
        [
            "vllm:generation_tokens_total",
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total",
            "vllm:kv_cache_usage_perc",
            "vllm:e2e_request_latency_seconds_bucket",
        ]
    )
)
def test_vllm_metrics(lines: list[str]) -> None:
    with contextlib.suppress(SpecmonError):
        vllm.metrics_from_text("".join(lines))


@FUZZ
@given(
    exposition_lines(
        [
            "llamacpp:tokens_predicted_total",
            "llamacpp:n_decode_total",
            "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
            "llamacpp:tokens_predicted_seconds_total",
        ]
    )
)
def test_llamacpp_metrics(lines: list[str]) -> None:
    with contextlib.suppress(SpecmonError):
        llamacpp.metrics_from_text("".join(lines))


chunk_bodies = st.text(max_size=200) | json_values.map(json.dumps)


@FUZZ
@given(chunk_bodies)
def test_vllm_and_llamacpp_chunks(data: str) -> None:
    for parse in (vllm.parse_chunk, llamacpp.parse_chunk):
        with contextlib.suppress(SpecmonError):
            parse(data)


objects = st.dictionaries(st.text(max_size=12), json_values, max_size=6)


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=10), objects, st.none() | objects)
def test_vllm_server_info(version: str, card: dict[str, Any], config: Any) -> None:
    with contextlib.suppress(SpecmonError):
        vllm.server_info_from(version, card, config, None)


@pytest.mark.slow
@FUZZ
@given(objects, st.text(max_size=10), st.none() | st.lists(objects, max_size=3))
def test_llamacpp_server_info(props: dict[str, Any], build: str, slots: Any) -> None:
    props["build_info"] = build  # what made it llama.cpp's /props (fetch_server_info checks)
    with contextlib.suppress(SpecmonError):
        llamacpp.server_info_from(props, slots, None)


# A TOML value of every kind, valid and not: what a hand-edited config file holds.
toml_values = st.sampled_from(
    [
        "1",
        "0",
        "-5",
        "1.5",
        "inf",
        "nan",
        "-0.0",
        "1e400",
        "99999999999999999999",
        '"x"',
        '""',
        '"127.0.0.1:8000"',
        "true",
        "false",
        "[1, 2]",
        "{a = 1}",
        "1979-05-27",
        '"ftp://h"',
        "'",
    ]
)


@pytest.mark.slow
@FUZZ
@given(
    st.dictionaries(st.sampled_from([*SETTINGS, "nope"]), toml_values, max_size=5), st.booleans()
)
def test_config_file(settings_: dict[str, str], table: bool) -> None:
    text = ("[specmon]\n" if table else "") + "".join(f"{k} = {v}\n" for k, v in settings_.items())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.toml"
        path.write_text(text)
        with contextlib.suppress(TargetError):
            load_config({}, config_path=str(path), environ={})


@pytest.mark.slow
@FUZZ
@given(
    st.dictionaries(
        st.sampled_from([ENV_PREFIX + name.upper() for name in SETTINGS]),
        st.text(max_size=12),
        max_size=5,
    )
)
def test_environment(environ: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        missing = str(Path(tmp) / "none.toml")
        with contextlib.suppress(TargetError):
            load_config({}, config_path=None, environ=environ | {"HOME": missing})


def _record() -> dict[str, Any]:
    info = server_info("spec")
    run = a_run(
        accept_length=2.1,
        server_accept_length=2.2,
        verify_ct=60,
        cycle_ms=27.6,
        cycle_ms_p50=27.5,
        cycle_ms_p95=28.0,
    )
    snapshot = Snapshot(
        1_796_000_000.0, "http://h:1", "x", info, Protocol(5, 1, 128, 0.0, "p"), (run, run)
    )
    return snapshot_to_record(snapshot)


RECORD = _record()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON value."""
    if isinstance(value, dict):
        inner = [_paths(v, (*prefix, k)) for k, v in value.items()]
    elif isinstance(value, list):
        inner = [_paths(v, (*prefix, i)) for i, v in enumerate(value)]
    else:
        return [prefix]
    return [prefix, *(p for group in inner for p in group)]


PATHS = [p for p in _paths(RECORD) if p]


@FUZZ
@given(st.sampled_from(PATHS), json_values | st.just(KeyError))
@example(("record_version",), 0)  # older than any specmon wrote
@example(("record_version",), 99)  # newer than this one
@example(("runs",), [])
def test_damaged_records(path: tuple[Any, ...], value: Any) -> None:
    record = copy.deepcopy(RECORD)
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    if value is KeyError:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    with contextlib.suppress(RecordError):
        snapshot_from_record(record)


@FUZZ
@given(json_values)
def test_any_json_as_a_record(value: Any) -> None:
    with contextlib.suppress(RecordError):
        snapshot_from_record(value)


@FUZZ
@given(st.text(max_size=60) | st.binary(max_size=30) | st.integers(-(2**63), 2**63 - 1))
def test_a_store_row_of_anything_is_skipped(record: object) -> None:
    with Store(":memory:") as store:
        store._db.execute(
            "INSERT INTO snapshots (created_at, url, speculative, fingerprint, record)"
            " VALUES (1, 'http://h:1', 0, 'f', ?)",
            (record,),
        )
        assert store.list() == []
        assert len(store.skipped) == 1
        with pytest.raises(SpecmonError, match="unreadable"):
            store.get(1)
