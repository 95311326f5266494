"""The dashboard's live inputs as plain data: Samples, probe outcomes, bench progress (recordings).

A recording (`specmon.session.recording`) holds every input the dashboard received, so these
types must come back exactly as they were. They are many frozen dataclasses that grow fields as
sources learn more, so they are written field by field from the dataclass itself and read back by
each field's annotation: a field added later is written without a change here, and a field a
recording lacks takes its default. Snapshots keep their own lossless form
(`serialize.snapshot_to_record`), with the id beside it. Reading validates every value, because
a recording outlives the code that wrote it, and a bad one is a `RecordError` naming where.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from specmon.model import Reading, ServerInfo, ServerMetrics, Snapshot, Telemetry
from specmon.storage.serialize import (
    RecordError,
    snapshot_from_record,
    snapshot_to_record,
    stored_server_info,
)

T = TypeVar("T")

READING_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (ServerInfo, ServerMetrics, Telemetry)
}
"""What a `Reading.value` may hold (the sampler's sources), by the tag written beside it."""


_PLAIN = frozenset((str, int, float, bool))


def to_data(value: Any) -> Any:
    """`value` (a dataclass of the model, or what one holds) as JSON-serialisable data."""
    if value is None or type(value) in _PLAIN:  # most values: first, at ~800 a sample
        return value
    if isinstance(value, Snapshot):
        return {"id": value.id, "record": snapshot_to_record(value)}
    if isinstance(value, Reading):
        fields = {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if value.value is not None:
            fields["type"] = type(value.value).__name__
        return fields
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list | frozenset):
        items = sorted(value) if isinstance(value, frozenset) else value
        return [to_data(item) for item in items]
    if isinstance(value, Mapping):
        return {str(key): to_data(item) for key, item in value.items()}
    return value


def from_data(kind: type[T], data: Any, where: str = "") -> T:
    """The `kind` that `to_data` wrote as `data`.

    Raises:
        RecordError: `data` is not one; the message names the field, e.g. "readings.info.tp_size".
    """
    return typing.cast(T, _read(kind, data, where or kind.__name__))


def _read(hint: Any, data: Any, where: str) -> Any:
    origin = get_origin(hint)
    if hint is Any:
        return data
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        if data is None and type(None) in options:
            return None
        (option,) = [o for o in options if o is not type(None)]  # the model's are `X | None`
        return _read(option, data, where)
    if hint is Snapshot:
        record = _object(data, where)
        snapshot = snapshot_from_record(_object(record.get("record"), where + ".record"))
        return dataclasses.replace(snapshot, id=_read(int | None, record.get("id"), where + ".id"))
    if hint is Reading:
        return _reading(data, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, data, where)
    if origin is tuple:
        args = get_args(hint)
        items = _list(data, where)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], item, f"{where}[{i}]") for i, item in enumerate(items))
        if len(items) != len(args):
            raise RecordError(f"{where}: {len(items)} items, expected {len(args)}")
        pairs = enumerate(zip(args, items, strict=True))
        return tuple(_read(a, item, f"{where}[{i}]") for i, (a, item) in pairs)
    if origin is list:
        (arg,) = get_args(hint)
        return [_read(arg, item, f"{where}[{i}]") for i, item in enumerate(_list(data, where))]
    if origin is frozenset:
        (arg,) = get_args(hint)
        return frozenset(_read(arg, item, where) for item in _list(data, where))
    if origin in (Mapping, dict):
        _key, arg = get_args(hint)
        mapping = _object(data, where)
        return {key: _read(arg, item, f"{where}.{key}") for key, item in mapping.items()}
    if origin is Literal:
        if data not in get_args(hint):
            raise RecordError(f"{where}: {data!r} is not one of {get_args(hint)}")
        return data
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(data)
        except ValueError:
            raise RecordError(f"{where}: unknown {hint.__name__} {data!r}") from None
    return _scalar(hint, data, where)


def _scalar(hint: Any, data: Any, where: str) -> Any:
    if hint is float and isinstance(data, int | float) and not isinstance(data, bool):
        return float(data)
    if hint in (int, str, bool) and type(data) is hint:
        return data
    raise RecordError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {_kind(data)}")


def _dataclass(cls: type[Any], data: Any, where: str) -> Any:
    record = _object(data, where)
    hints = _hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in record:
            values[field.name] = _read(
                hints[field.name], record[field.name], f"{where}.{field.name}"
            )
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise RecordError(f"{where}: missing {field.name!r}")
    return cls(**values)


def _reading(data: Any, where: str) -> Reading:
    record = dict(_object(data, where))
    tag = record.pop("type", None)
    value = record.get("value")
    reading: Reading = _dataclass(Reading, {**record, "value": None}, where)
    if tag is None:
        return reading
    kind = READING_TYPES.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise RecordError(f"{where}.type: unknown reading type {tag!r}")
    value = _read(kind, value, f"{where}.value")
    if isinstance(value, ServerInfo):  # a crafted recording's, or an old one's: made safe text
        value = stored_server_info(value)
    return dataclasses.replace(reading, value=value)


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """The fields' annotations, resolved once a class (they are strings under PEP 563)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def _object(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected an object, got {_kind(data)}")
    return data


def _list(data: Any, where: str) -> list[Any]:
    if not isinstance(data, list):
        raise RecordError(f"{where}: expected a list, got {_kind(data)}")
    return data


def _kind(data: object) -> str:
    return "null" if data is None else type(data).__name__
