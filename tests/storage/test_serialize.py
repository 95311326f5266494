"""The documented `--json` schema and the lossless storage record of snapshots."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from typing import Any

import pytest
from snapshots import big_moe_server

from specmon.analysis.validity import fingerprint
from specmon.backend_facts import VLLM
from specmon.model import (
    Lifetime,
    Protocol,
    RunConditions,
    RunFigures,
    ServerInfo,
    Snapshot,
    SpecConfig,
    Stats,
)
from specmon.storage.serialize import (
    RecordError,
    snapshot_from_record,
    snapshot_to_dict,
    snapshot_to_record,
    summary_of,
)

# docs/design.md §1: a large MoE on 8 GPUs; baseline 62.9 tok/s, EAGLE-3 at 75.9 tok/s with a
# 29.9 ms draft+verify cycle and accept length 2.1.
ARGS = {
    "model_path": "org/Big-MoE",
    "tp_size": 8,
    "mem_fraction_static": 0.8,
    "port": 30000,
    "random_seed": 7,
    "api_key": "***",  # as specmon stores it: masked (`sources.secrets.mask_args`)
}
SPEC_ARGS = {
    **ARGS,
    "speculative_algorithm": "EAGLE3",
    "speculative_num_steps": 2,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 3,
}
PROTOCOL = Protocol(runs=5, warmup=1, max_tokens=500, temperature=0.0, prompt="Explain a CPU.")


def make_run(
    tok_s: float | None, accept: float | None = None, cycle: float | None = None
) -> RunFigures:
    e2e_s = 0.045 + (499 / tok_s if tok_s else 8.0)
    return RunFigures(
        completion_tokens=500,
        prompt_tokens=21,
        ttft_ms=45.0,
        e2e_s=e2e_s,
        e2e_tok_s=500 / e2e_s,
        decode_tok_s=tok_s,
        accept_length=accept,
        server_accept_length=None if accept is None else accept - 0.02,
        verify_ct=None if accept is None else round(499 / accept),
        cycle_ms=cycle,
        cycle_ms_p50=cycle,
        cycle_ms_p95=None if cycle is None else cycle * 1.2,
    )


def make_snapshot(*, spec: bool, snapshot_id: int | None = None) -> Snapshot:
    server = replace(
        big_moe_server(
            SpecConfig("EAGLE3", 2, 1, 3, "org/Big-MoE-eagle3") if spec else None,
            SPEC_ARGS if spec else ARGS,
        ),
        last_gen_throughput=75.2 if spec else None,
        avg_spec_accept_length=2.08 if spec else None,
    )
    if spec:
        runs = tuple(
            make_run(t, a, c)
            for t, a, c in zip(
                [75.7, 75.9, 76.1, 75.8, 76.0],
                [2.05, 2.1, 2.15, 2.1, 2.08],
                [29.8, 29.9, 30.0, 29.9, 29.95],
                strict=True,
            )
        )
    else:
        runs = tuple(make_run(t) for t in [62.8, 62.9, 63.0, 62.9, 62.85])
    return Snapshot(
        created_at=1_750_000_000.5,
        url="http://10.1.230.174:8000",
        label="eagle tuned" if spec else None,
        server=server,
        protocol=PROTOCOL,
        runs=runs,
        id=snapshot_id,
        lifetime=Lifetime("0123456789ab", 1_749_990_000.0, (("generation_tokens_total", 12.0),)),
    )


STATS_KEYS = {"median", "min", "max", "mean", "stdev"}


def test_dict_has_exactly_the_documented_keys() -> None:
    data = snapshot_to_dict(make_snapshot(spec=True, snapshot_id=4))
    assert set(data) == {
        "schema",
        "target",
        "protocol",
        "runs",
        "summary",
        "snapshot_id",
        # documented additions
        "created_at",
        "label",
        "fingerprint",
        "gpu",
        "pooled",
    }
    assert data["schema"] == 1
    assert set(data["pooled"]) == {
        "decode_tok_s",
        "decode_tok_s_rel_se",
        "accept_length",
        "cycle_ms",
        "timed_runs",
    }
    assert set(data["target"]) == {
        "url",
        "backend",
        "version",
        "model",
        "speculative",
        "tp_size",
        "dp_size",
        "pp_size",
    }
    assert set(data["target"]["speculative"]) == {
        "algorithm",
        "num_steps",
        "eagle_topk",
        "num_draft_tokens",
    }
    assert set(data["protocol"]) == {
        "runs",
        "warmup",
        "max_tokens",
        "temperature",
        "prompt",
        "concurrency",
    }
    assert len(data["runs"]) == 5
    for run in data["runs"]:
        assert set(run) == {
            "completion_tokens",
            "prompt_tokens",
            "ttft_ms",
            "e2e_s",
            "e2e_tok_s",
            "decode_tok_s",
            "accept_length",
            "server_accept_length",
            "verify_ct",
            "cycle_ms",
            "cycle_ms_p50",
            "cycle_ms_p95",
            "cycle_source",
            "decode_tokens",
            "decode_s",
            "decode_steps",
            "cycle_basis",
            "buffered",
            "position_accept",
            "position_steps",
            "position_source",
            "server_accept_source",
            "conditions",
        }
    assert set(data["summary"]) == {
        "decode_tok_s",
        "e2e_tok_s",
        "ttft_ms",
        "accept_length",
        "cycle_ms",
    }
    for stats in data["summary"].values():
        assert set(stats) == STATS_KEYS


def test_dict_values() -> None:
    snapshot = make_snapshot(spec=True, snapshot_id=4)
    data = snapshot_to_dict(snapshot)
    assert data["snapshot_id"] == 4
    assert data["created_at"] == 1_750_000_000.5
    assert data["label"] == "eagle tuned"
    assert data["fingerprint"] == fingerprint(SPEC_ARGS)
    assert data["target"] == {
        "url": "http://10.1.230.174:8000",
        "backend": "sglang",
        "version": "0.5.17",
        "model": "org/Big-MoE",
        "tp_size": 8,
        "dp_size": 1,
        "pp_size": 1,
        "speculative": {
            "algorithm": "EAGLE3",
            "num_steps": 2,
            "eagle_topk": 1,
            "num_draft_tokens": 3,
        },
    }
    assert data["protocol"] == {
        "runs": 5,
        "warmup": 1,
        "max_tokens": 500,
        "temperature": 0.0,
        "prompt": "Explain a CPU.",
        "concurrency": 1,
    }
    assert data["runs"][1]["decode_tok_s"] == 75.9
    assert data["runs"][1]["verify_ct"] == 238
    summary = data["summary"]
    assert summary["decode_tok_s"]["median"] == 75.9
    assert summary["decode_tok_s"]["min"] == 75.7
    assert summary["decode_tok_s"]["max"] == 76.1
    assert summary["decode_tok_s"]["mean"] == pytest.approx(75.9)
    assert summary["decode_tok_s"]["stdev"] == pytest.approx(0.158, abs=1e-3)
    assert summary["accept_length"]["median"] == 2.1
    assert summary["cycle_ms"]["median"] == 29.9
    assert summary["ttft_ms"] == {
        "median": 45.0,
        "min": 45.0,
        "max": 45.0,
        "mean": 45.0,
        "stdev": 0.0,
    }
    # The documented output is strict JSON: no NaN or Infinity.
    json.dumps(data, allow_nan=False)


def test_dict_nulls_without_speculation() -> None:
    data = snapshot_to_dict(make_snapshot(spec=False))
    assert data["snapshot_id"] is None
    assert data["label"] is None
    assert data["target"]["speculative"] is None
    assert data["summary"]["accept_length"] is None
    assert data["summary"]["cycle_ms"] is None
    assert data["summary"]["decode_tok_s"]["median"] == 62.9
    assert all(run["accept_length"] is None and run["cycle_ms"] is None for run in data["runs"])
    # The speculative and plain configurations share a fingerprint (docs/design.md §5).
    assert data["fingerprint"] == snapshot_to_dict(make_snapshot(spec=True))["fingerprint"]


def test_decode_summary_skips_runs_without_decode_figure() -> None:
    snapshot = dataclasses.replace(
        make_snapshot(spec=False), runs=(make_run(62.8), make_run(None), make_run(63.0))
    )
    assert summary_of(snapshot, "decode_tok_s") == Stats(
        median=62.9, min=62.8, max=63.0, mean=62.9, stdev=pytest.approx(0.1414, abs=1e-4)
    )
    single = dataclasses.replace(snapshot, runs=(make_run(None),))
    assert snapshot_to_dict(single)["summary"]["decode_tok_s"] is None


def test_summary_of_rejects_unknown_figure() -> None:
    with pytest.raises(ValueError, match="unknown run figure 'tok_s'"):
        summary_of(make_snapshot(spec=False), "tok_s")


@pytest.mark.parametrize("spec", [True, False])
def test_record_round_trip_is_exact(spec: bool) -> None:
    snapshot = make_snapshot(spec=spec)
    record = snapshot_to_record(snapshot)
    assert record["record_version"] == 1
    # Through JSON text, as the store keeps it.
    assert snapshot_from_record(json.loads(json.dumps(record))) == snapshot


def test_records_from_before_lifetimes_and_pooled_parts_still_read() -> None:
    record = json.loads(json.dumps(snapshot_to_record(make_snapshot(spec=True))))
    del record["lifetime"]
    for run in record["runs"]:
        for key in ("decode_tokens", "decode_s", "decode_steps", "cycle_basis", "buffered"):
            del run[key]
    snapshot = snapshot_from_record(record)
    assert snapshot.lifetime is None
    assert snapshot.runs[0].decode_tokens is None and not snapshot.runs[0].buffered


def test_a_key_stored_in_clear_by_an_older_specmon_reads_back_masked() -> None:
    """A record written before server args were masked holds SGLang's `api_key` as the server
    echoed it: read back, it shows as the mask, on every surface that reads the store."""
    record = json.loads(json.dumps(snapshot_to_record(make_snapshot(spec=True))))
    record["server"]["args"]["api_key"] = "sk-live-0123456789"
    record["server"]["args"]["launch"] = (
        "python -m sglang.launch_server --api-key sk-live-0123456789"
    )
    read = snapshot_from_record(record)
    assert read.server.args["api_key"] == "***"
    assert "sk-live" not in json.dumps(read.server.args)


LOADED = RunConditions(
    others_running=1,
    queued=0,
    load_readings=6,
    read_lag_ms=6.1,
    read_lag_max_ms=22.0,
    host_cpu_pct=99.5,
    host_steal_pct=0.0,
)


def test_conditions_round_trip_and_are_documented_in_the_export() -> None:
    snapshot = make_snapshot(spec=True)
    runs = (replace(snapshot.runs[0], conditions=LOADED), *snapshot.runs[1:])
    snapshot = replace(snapshot, runs=runs)
    record = json.loads(json.dumps(snapshot_to_record(snapshot)))
    assert snapshot_from_record(record) == snapshot
    exported = snapshot_to_dict(snapshot)["runs"]
    assert exported[0]["conditions"] == dataclasses.asdict(LOADED)
    assert exported[1]["conditions"] is None  # not watched: unknown, not "alone"
    assert set(exported[0]["conditions"]) == {f.name for f in dataclasses.fields(RunConditions)}


def test_a_record_from_before_conditions_reads_them_as_unknown() -> None:
    snapshot = make_snapshot(spec=False)
    snapshot = replace(snapshot, runs=tuple(replace(r, conditions=LOADED) for r in snapshot.runs))
    record = json.loads(json.dumps(snapshot_to_record(snapshot)))
    for run in record["runs"]:
        del run["conditions"]
    assert all(run.conditions is None for run in snapshot_from_record(record).runs)


def test_a_record_with_mistyped_conditions_names_the_field() -> None:
    record = json.loads(json.dumps(snapshot_to_record(make_snapshot(spec=False))))
    record["runs"][1]["conditions"] = {**dataclasses.asdict(LOADED), "others_running": "two"}
    with pytest.raises(RecordError, match=r"runs\[1\]\.conditions\.others_running"):
        snapshot_from_record(record)


def test_record_leaves_the_id_to_the_store() -> None:
    record = snapshot_to_record(make_snapshot(spec=True, snapshot_id=9))
    assert "id" not in record
    assert snapshot_from_record(record).id is None


def test_record_keeps_every_dataclass_field() -> None:
    """A field added to the model must be added to the record too, or it would be lost."""
    record = snapshot_to_record(make_snapshot(spec=True))
    snapshot_fields = {f.name for f in dataclasses.fields(Snapshot)} - {"id"}
    assert snapshot_fields <= set(record)
    assert {f.name for f in dataclasses.fields(ServerInfo)} <= set(record["server"])
    assert {f.name for f in dataclasses.fields(SpecConfig)} <= set(record["server"]["speculative"])
    assert {f.name for f in dataclasses.fields(Protocol)} <= set(record["protocol"])
    assert {f.name for f in dataclasses.fields(RunFigures)} <= set(record["runs"][0])
    assert record["server"]["args"] == SPEC_ARGS


def test_a_record_from_before_concurrency_reads_as_one_stream() -> None:
    record = snapshot_to_record(make_snapshot(spec=False))
    del record["protocol"]["concurrency"]
    assert snapshot_from_record(record).protocol.concurrency == 1
    record["protocol"]["concurrency"] = 4
    assert snapshot_from_record(record).protocol.concurrency == 4


def test_record_accepts_integers_for_numbers_and_ignores_extra_keys() -> None:
    record = snapshot_to_record(make_snapshot(spec=False))
    record["protocol"]["temperature"] = 0
    record["added_by_a_later_version"] = {"anything": 1}
    snapshot = snapshot_from_record(record)
    assert snapshot.protocol.temperature == 0.0
    assert isinstance(snapshot.protocol.temperature, float)


def _broken(edit: Any) -> dict[str, Any]:
    record = snapshot_to_record(make_snapshot(spec=True))
    edit(record)
    return record


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("url"), r"^record\.url: missing$"),
        (lambda r: r.pop("record_version"), r"^record\.record_version: missing$"),
        (
            lambda r: r["runs"][2].update(ttft_ms="45"),
            r"^record\.runs\[2\]\.ttft_ms: expected a number, got the string '45'$",
        ),
        (
            lambda r: r["protocol"].update(max_tokens=True),
            r"^record\.protocol\.max_tokens: expected an integer, got a boolean$",
        ),
        (
            lambda r: r["protocol"].update(runs=5.0),
            r"^record\.protocol\.runs: expected an integer, got the number 5\.0$",
        ),
        (
            lambda r: r["server"]["speculative"].update(algorithm=None),
            r"^record\.server\.speculative\.algorithm: expected a string, got null$",
        ),
        (
            lambda r: r["server"].update(metrics_enabled="yes"),
            r"^record\.server\.metrics_enabled: expected true, false or null",
        ),
        (
            lambda r: r["server"].update(args=["tp_size", 8]),
            r"^record\.server\.args: expected an object, got a list$",
        ),
        (lambda r: r.update(runs={}), r"^record\.runs: expected a list, got an object$"),
        (lambda r: r["runs"].append(3), r"^record\.runs\[5\]: expected an object"),
        (lambda r: r["server"].pop("info_route"), r"^record\.server\.info_route: missing$"),
        (lambda r: r.update(record_version=0), r"bad record_version 0"),
    ],
)
def test_record_errors_name_the_field(edit: Any, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        snapshot_from_record(_broken(edit))


def test_record_of_a_newer_specmon_is_refused() -> None:
    record = _broken(lambda r: r.update(record_version=2))
    with pytest.raises(RecordError, match="written by a newer specmon"):
        snapshot_from_record(record)


def test_record_that_is_not_an_object() -> None:
    with pytest.raises(RecordError, match=r"^record: expected an object, got a list$"):
        snapshot_from_record([])  # type: ignore[arg-type]
    assert issubclass(RecordError, ValueError)


def test_a_vllm_record_keeps_the_name_of_its_draft_length() -> None:
    """vLLM's draft length is `num_speculative_tokens` (issue 25); records from before the name
    was kept read with it too."""
    spec = SpecConfig("eagle3", 3, None, None, None, VLLM.length_name)
    base = make_snapshot(spec=True)
    snapshot = replace(base, server=replace(base.server, backend="vllm", speculative=spec))
    record = snapshot_to_record(snapshot)
    assert snapshot_from_record(record).server.speculative == spec
    del record["server"]["speculative"]["length_name"]
    read = snapshot_from_record(record).server.speculative
    assert read is not None and read.describe() == "eagle3 num_speculative_tokens=3"
