"""Snapshots as plain data: the documented `--json` output and the store's round-trip record.

Two forms, on purpose:

- `snapshot_to_dict` is the public, documented schema (`specmon bench --json`): what a script
  reads. It carries derived summaries and leaves out what scripts have no use for (the full
  server args). Its keys only ever grow.
- `snapshot_to_record` / `snapshot_from_record` are the lossless storage form: every field of the
  Snapshot, so a stored snapshot comes back equal to the one saved. Reading validates every field,
  because a store file outlives the code that wrote it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import fields
from enum import StrEnum
from typing import Any, TypeVar

from specmon.analysis.comparison import Comparison
from specmon.analysis.load import Crossover
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.stats import summarize
from specmon.analysis.validity import fingerprint
from specmon.backend_facts import find
from specmon.model import (
    AcceptSource,
    CycleBasis,
    GpuState,
    Lifetime,
    PositionSource,
    Protocol,
    RunConditions,
    RunFigures,
    ServerInfo,
    Snapshot,
    SpecConfig,
    Stats,
    StepsSource,
)
from specmon.safe_text import safe_optional, safe_server_info, safe_text
from specmon.sources.secrets import mask_args

E = TypeVar("E", bound=StrEnum)
T = TypeVar("T")

SCHEMA = 1
"""Version of the `snapshot_to_dict` schema."""

RECORD_VERSION = 1
"""Version of the `snapshot_to_record` form; bump it on any change old readers would misread."""

SUMMARY_FIGURES = ("decode_tok_s", "e2e_tok_s", "ttft_ms", "accept_length", "cycle_ms")
"""The run figures summarised in `snapshot_to_dict`'s "summary"."""

_RUN_FIELDS = tuple(f.name for f in fields(RunFigures))


class RecordError(ValueError):
    """A stored record that cannot be read back; `str()` names the field and the problem."""


def summary_of(snapshot: Snapshot, figure: str) -> Stats | None:
    """Statistics of one run figure over the snapshot's runs.

    Args:
        snapshot: The snapshot whose runs are summarised.
        figure: A `RunFigures` field name, e.g. "decode_tok_s", "accept_length", "cycle_ms".

    Returns:
        The statistics over the runs that have the figure, or None when none has it (accept
        length and cycle time without speculation).

    Raises:
        ValueError: `figure` is not a `RunFigures` field.
    """
    if figure not in _RUN_FIELDS:
        raise ValueError(f"unknown run figure {figure!r}")
    values = [v for run in snapshot.runs if (v := getattr(run, figure)) is not None]
    return summarize(values) if values else None


def stats_to_dict(stats: Stats | None) -> dict[str, float | None] | None:
    """A `Stats` as {"median", "min", "max", "mean", "stdev"}, or None."""
    if stats is None:
        return None
    return {
        "median": stats.median,
        "min": stats.min,
        "max": stats.max,
        "mean": stats.mean,
        "stdev": stats.stdev,
    }


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The documented JSON form of a snapshot (`specmon bench --json`, schema 1).

    Keys: "schema", "created_at" (unix seconds), "label", "target" (url, backend, version, model,
    tp/dp/pp sizes, "speculative" or null), "protocol", "runs" (every `RunFigures` field),
    "summary" (per figure in `SUMMARY_FIGURES`, null when no run has it), "pooled" (the one
    statistic every comparison uses: Σ tokens / Σ time, see docs/metrics.md), "fingerprint" (of the
    server args, see `analysis.validity.fingerprint`), "snapshot_id" (null until stored) and
    "gpu" (the GPU state during the runs, `gpu_state_to_dict`; null when unread).
    """
    server = snapshot.server
    spec = server.speculative
    return {
        "schema": SCHEMA,
        "created_at": snapshot.created_at,
        "label": snapshot.label,
        "target": {
            "url": snapshot.url,
            **_identity(server),
            "speculative": None if spec is None else _speculative(spec, stored=False),
        },
        "protocol": dataclasses.asdict(snapshot.protocol),
        "runs": [_run_to_dict(run) for run in snapshot.runs],
        "summary": {name: stats_to_dict(summary_of(snapshot, name)) for name in SUMMARY_FIGURES},
        "pooled": pooled_to_dict(pool(snapshot.runs)),
        "fingerprint": fingerprint(server.args),
        "snapshot_id": snapshot.id,
        "gpu": gpu_state_to_dict(snapshot.gpu),
    }


def _identity(server: ServerInfo) -> dict[str, Any]:
    """What a server is, in both forms: backend, version, model, parallel sizes."""
    return {
        "backend": server.backend,
        "version": server.version,
        "model": server.model,
        "tp_size": server.tp_size,
        "dp_size": server.dp_size,
        "pp_size": server.pp_size,
    }


def _speculative(spec: SpecConfig, *, stored: bool) -> dict[str, Any]:
    """Its speculative configuration; the draft model's path and the draft length's name only
    in the stored record (the export's schema stays SGLang's four keys)."""
    fields = dataclasses.asdict(spec)
    if not stored:
        del fields["draft_model_path"], fields["length_name"]
    return fields


def pooled_to_dict(pooled: Pooled) -> dict[str, Any]:
    """The one statistic of the runs (analysis/pooled.py): what every comparison uses."""
    return {
        "decode_tok_s": pooled.decode_tok_s,
        "decode_tok_s_rel_se": pooled.rel_se,
        "accept_length": pooled.accept_length,
        "cycle_ms": pooled.cycle_ms,
        "timed_runs": pooled.runs,
    }


def comparison_to_dict(c: Comparison | None) -> dict[str, Any] | None:
    """A comparison's figures (analysis/comparison.py); speedup as fractions (0.21 is +21%)."""
    if c is None:
        return None
    return {
        "baseline_decode_tok_s": c.base_tok_s,
        "decode_tok_s": c.now_tok_s,
        "speedup": {
            "value": c.speedup.value,
            "low": c.speedup.low,
            "high": c.speedup.high,
            "level": c.speedup.level,
            "probes": c.speedup.now_runs,
            "spread_assumed": c.speedup.assumed,
        },
        "verdict": c.verdict.value,
        "tentative": c.tentative,
        "break_even": c.break_even,
        "margin": c.margin,
    }


def _run_to_dict(run: RunFigures) -> dict[str, Any]:
    fields = {name: getattr(run, name) for name in _RUN_FIELDS}
    fields["conditions"] = conditions_to_dict(run.conditions)
    return fields


def conditions_to_dict(conditions: RunConditions | None) -> dict[str, Any] | None:
    """A run's `RunConditions` as plain data (every field), or None when unknown."""
    return None if conditions is None else dataclasses.asdict(conditions)


def _conditions_from(run: _Reader) -> RunConditions | None:
    # Records written before conditions were kept have none: unknown, never "alone".
    conditions = run.added("conditions", run.opt_obj)
    if conditions is None:
        return None
    return RunConditions(
        others_running=conditions.opt_integer("others_running"),
        queued=conditions.opt_integer("queued"),
        load_readings=conditions.integer("load_readings"),
        read_lag_ms=conditions.opt_number("read_lag_ms"),
        read_lag_max_ms=conditions.opt_number("read_lag_max_ms"),
        host_cpu_pct=conditions.opt_number("host_cpu_pct"),
        host_steal_pct=conditions.opt_number("host_steal_pct"),
    )


def snapshot_to_record(snapshot: Snapshot) -> dict[str, Any]:
    """The lossless storage form of a snapshot, JSON-serialisable.

    The id is left out: the store owns it (it is the row's key), and sets it on reading.
    """
    server = snapshot.server
    spec = server.speculative
    return {
        "record_version": RECORD_VERSION,
        "created_at": snapshot.created_at,
        "url": snapshot.url,
        "label": snapshot.label,
        "server": {
            **_identity(server),
            "speculative": None if spec is None else _speculative(spec, stored=True),
            "stream_interval": server.stream_interval,
            "cuda_graph_disabled": server.cuda_graph_disabled,
            "cuda_graph_max_bs": server.cuda_graph_max_bs,
            "metrics_enabled": server.metrics_enabled,
            # Already masked by the source that read them (sources/secrets.py).
            "args": dict(server.args),
            "last_gen_throughput": server.last_gen_throughput,
            "avg_spec_accept_length": server.avg_spec_accept_length,
            "info_route": server.info_route,
        },
        "protocol": dataclasses.asdict(snapshot.protocol),
        "runs": [_run_to_dict(run) for run in snapshot.runs],
        "gpu": gpu_state_to_dict(snapshot.gpu),
        "lifetime": None
        if snapshot.lifetime is None
        else {
            "launch": snapshot.lifetime.launch,
            "started_at": snapshot.lifetime.started_at,
            "counters": dict(snapshot.lifetime.counters),
        },
    }


def _lifetime_from(record: _Reader) -> Lifetime | None:
    # Records written before lifetimes were kept have no "lifetime": None (unverifiable).
    lifetime = record.added("lifetime", record.opt_obj)
    if lifetime is None:
        return None
    counters = lifetime.obj("counters")
    return Lifetime(
        launch=lifetime.string("launch"),
        started_at=lifetime.opt_number("started_at"),
        counters=tuple((name, counters.number(name)) for name in counters.data),
    )


def gpu_state_to_dict(state: GpuState | None) -> dict[str, Any] | None:
    """A `GpuState` as plain data (every field, lists for tuples), or None."""
    if state is None:
        return None
    return {
        "source": state.source,
        "gpu_count": state.gpu_count,
        "gpu_name": state.gpu_name,
        "sm_clock_mhz": state.sm_clock_mhz,
        "sm_clock_max_mhz": state.sm_clock_max_mhz,
        "power_limit_w": state.power_limit_w,
        "max_temperature_c": state.max_temperature_c,
        "throttle_reasons": list(state.throttle_reasons),
        "other_processes": list(state.other_processes),
        "samples": state.samples,
    }


def _gpu_from(record: _Reader) -> GpuState | None:
    # Records written before GPU state was kept have no "gpu" key: they read as None.
    if record.data.get("gpu") is None:
        return None
    gpu = record.obj("gpu")
    return GpuState(
        source=gpu.string("source"),
        gpu_count=gpu.integer("gpu_count"),
        gpu_name=safe_optional(gpu.opt_string("gpu_name")),
        sm_clock_mhz=gpu.opt_number("sm_clock_mhz"),
        sm_clock_max_mhz=gpu.opt_number("sm_clock_max_mhz"),
        power_limit_w=gpu.opt_number("power_limit_w"),
        max_temperature_c=gpu.opt_number("max_temperature_c"),
        throttle_reasons=tuple(safe_text(s) for s in gpu.strings("throttle_reasons")),
        other_processes=tuple(safe_text(s) for s in gpu.strings("other_processes")),
        samples=gpu.integer("samples"),
    )


def snapshot_from_record(record: Mapping[str, Any]) -> Snapshot:
    """Rebuild a snapshot from `snapshot_to_record`'s form, checking every field.

    Unknown extra keys are ignored (a later record version may add some); missing or mistyped
    ones are errors. Every string a server supplied, the address and the label come back safe
    text (`safe_text`): a store written before specmon made them so may hold escape sequences.

    Raises:
        RecordError: A field is missing or has the wrong type, or the record was written by a
            newer specmon.
    """
    top = _Reader(record, "record")
    version = top.integer("record_version")
    if version > RECORD_VERSION:
        raise RecordError(
            f"record version {version} was written by a newer specmon "
            f"(this one reads up to {RECORD_VERSION}): upgrade specmon"
        )
    if version < 1:
        raise RecordError(f"record: bad record_version {version}")
    server = top.obj("server")
    spec = server.opt_obj("speculative")
    args = server.obj("args")
    protocol = top.obj("protocol")
    snapshot = Snapshot(
        created_at=top.number("created_at"),
        url=safe_text(top.string("url")),
        label=safe_optional(top.opt_string("label")),
        server=ServerInfo(
            backend=server.string("backend"),
            version=server.opt_string("version"),
            model=server.opt_string("model"),
            tp_size=server.opt_integer("tp_size"),
            dp_size=server.opt_integer("dp_size"),
            pp_size=server.opt_integer("pp_size"),
            speculative=None
            if spec is None
            else SpecConfig(
                algorithm=spec.string("algorithm"),
                num_steps=spec.opt_integer("num_steps"),
                eagle_topk=spec.opt_integer("eagle_topk"),
                num_draft_tokens=spec.opt_integer("num_draft_tokens"),
                draft_model_path=spec.opt_string("draft_model_path"),
                # Records from before the name was kept: the backend's own name (vLLM's was
                # the only one then).
                length_name=spec.added("length_name", spec.opt_string)
                or _length_name(server.string("backend")),
            ),
            stream_interval=server.opt_integer("stream_interval"),
            cuda_graph_disabled=server.opt_bool("cuda_graph_disabled"),
            cuda_graph_max_bs=server.opt_integer("cuda_graph_max_bs"),
            metrics_enabled=server.opt_bool("metrics_enabled"),
            args=dict(args.data),
            last_gen_throughput=server.opt_number("last_gen_throughput"),
            avg_spec_accept_length=server.opt_number("avg_spec_accept_length"),
            info_route=server.string("info_route"),
        ),
        protocol=Protocol(
            runs=protocol.integer("runs"),
            warmup=protocol.integer("warmup"),
            max_tokens=protocol.integer("max_tokens"),
            temperature=protocol.number("temperature"),
            prompt=protocol.string("prompt"),
            # Records from before `ab` ran one stream at a time and do not name it.
            concurrency=protocol.integer("concurrency") if "concurrency" in protocol.data else 1,
        ),
        runs=tuple(_run_from(run) for run in top.objs("runs")),
        gpu=_gpu_from(top),
        lifetime=_lifetime_from(top),
    )
    return dataclasses.replace(snapshot, server=stored_server_info(snapshot.server))


def _length_name(backend: str) -> str | None:
    """A backend's own name for k; None for one not installed here (its record keeps its
    steps and draft tokens, which need no name)."""
    found = find(backend)
    return found.length_name if found is not None else None


def stored_server_info(info: ServerInfo) -> ServerInfo:
    """A server's info as read back from a store or a recording: its text made safe
    (`safe_server_info`) and its credentials masked (`mask_args`), for a record written before
    specmon did either (an SGLang `api_key` was stored as the server echoed it)."""
    info = safe_server_info(info)
    masked = mask_args(info.args)
    return info if masked == info.args else dataclasses.replace(info, args=masked)


def _run_from(run: _Reader) -> RunFigures:
    return RunFigures(
        completion_tokens=run.integer("completion_tokens"),
        prompt_tokens=run.opt_integer("prompt_tokens"),
        ttft_ms=run.number("ttft_ms"),
        e2e_s=run.number("e2e_s"),
        e2e_tok_s=run.opt_number("e2e_tok_s"),
        decode_tok_s=run.opt_number("decode_tok_s"),
        accept_length=run.opt_number("accept_length"),
        server_accept_length=run.opt_number("server_accept_length"),
        verify_ct=run.opt_integer("verify_ct"),
        cycle_ms=run.opt_number("cycle_ms"),
        cycle_ms_p50=run.opt_number("cycle_ms_p50"),
        cycle_ms_p95=run.opt_number("cycle_ms_p95"),
        # Records written before specmon read vLLM and llama.cpp have no source: None.
        cycle_source=run.opt_enum("cycle_source", StepsSource),
        # Records written before these were kept: derived from the figures when pooled.
        decode_tokens=run.added("decode_tokens", run.opt_integer),
        decode_s=run.added("decode_s", run.opt_number),
        decode_steps=run.added("decode_steps", run.opt_number),
        cycle_basis=run.opt_enum("cycle_basis", CycleBasis),
        buffered=bool(run.added("buffered", run.opt_bool)),
        # Records written before acceptance by position was kept have none.
        position_accept=run.added("position_accept", run.opt_numbers),
        position_steps=run.added("position_steps", run.opt_number),
        position_source=run.opt_enum("position_source", PositionSource),
        # Records written before the source was kept have none.
        server_accept_source=run.opt_enum("server_accept_source", AcceptSource),
        conditions=_conditions_from(run),
    )


_MISSING = object()


class _Reader:
    """Typed access to one JSON object; errors name the field's path, e.g. `runs[2].ttft_ms`."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
            raise RecordError(f"{where}: expected an object, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.where = where

    def _get(self, key: str) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            raise RecordError(f"{self.where}.{key}: missing")
        return value

    def _bad(self, key: str, expected: str, value: object) -> RecordError:
        return RecordError(f"{self.where}.{key}: expected {expected}, got {_kind(value)}")

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def opt_string(self, key: str) -> str | None:
        return None if self._get(key) is None else self.string(key)

    def integer(self, key: str) -> int:
        value = self._get(key)
        # bool is an int subclass; a true/false where a count belongs is corruption.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer", value)
        return value

    def opt_integer(self, key: str) -> int | None:
        return None if self._get(key) is None else self.integer(key)

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number", value)
        return float(value)

    def opt_number(self, key: str) -> float | None:
        return None if self._get(key) is None else self.number(key)

    def added(self, key: str, read: Callable[[str], T]) -> T | None:
        """A field that later records added: read with `read`, or None when absent."""
        return read(key) if key in self.data else None

    def opt_enum(self, key: str, kind: type[E]) -> E | None:
        """An optional enum value by its text; None when absent (older records)."""
        text = self.added(key, self.opt_string)
        if text is None:
            return None
        try:
            return kind(text)
        except ValueError:
            raise self._bad(key, f"one of {[e.value for e in kind]}", text) from None

    def opt_bool(self, key: str) -> bool | None:
        value = self._get(key)
        if value is not None and not isinstance(value, bool):
            raise self._bad(key, "true, false or null", value)
        return value

    def opt_numbers(self, key: str) -> tuple[float, ...] | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            raise self._bad(key, "a list of numbers", value)
        return tuple(float(v) for v in value)

    def obj(self, key: str) -> _Reader:
        return _Reader(self._get(key), f"{self.where}.{key}")

    def opt_obj(self, key: str) -> _Reader | None:
        return None if self._get(key) is None else self.obj(key)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._bad(key, "a list of strings", value)
        return tuple(value)

    def objs(self, key: str) -> list[_Reader]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self._bad(key, "a list", value)
        return [_Reader(item, f"{self.where}.{key}[{i}]") for i, item in enumerate(value)]


def _kind(value: object) -> str:
    """A short description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a non-finite number" if not math.isfinite(value) else f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 20 else value[:17] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def crossover_to_dict(cross: Crossover) -> dict[str, Any]:
    """Where speculation stops paying (`analysis.load.crossover`), as `ab --json` and
    `check --json` give it."""
    return {
        "pays_up_to": cross.pays_up_to,
        "stops_at": cross.stops_at,
        "verdict": cross.verdict.value if cross.verdict is not None else None,
        "exceptions": list(cross.exceptions),
    }
