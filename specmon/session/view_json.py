"""The dashboard's View as plain data: `specmon --once --json` prints it.

One serializer for every View, whatever the surface that asks: the dashboard renders the View,
`--once` writes it here, field for field, so the two cannot say different things. The keys are
the View's own field names (docs/usage.md, "One frame as JSON"); they only ever grow.
"""

from __future__ import annotations

import dataclasses
import math
from enum import Enum
from typing import Any

from specmon.session.view import View

FRAME_SCHEMA = 1
"""Version of the `--once --json` document."""


def view_to_dict(view: View) -> dict[str, Any]:
    """Every field of the View, recursively: enums as their values, tuples as lists, a NaN or
    an infinity as None ("—" on the dashboard), `missing` as {figure: why}; the baseline with
    whether its comparison counts (`BaselineView.applies`) and its validity's state in one word
    (`Validity.state`, as the exporter serves it)."""
    document: dict[str, Any] = _plain(view)
    document["missing"] = dict(view.missing)
    baseline = document["baseline"]
    baseline["applies"] = view.baseline.applies
    if view.baseline.validity is not None:
        baseline["validity"]["state"] = view.baseline.validity.state.value
    gap = view.spec.traffic_gap
    if gap is not None:
        document["spec"]["traffic_gap"].update(share=gap.share, named=gap.named)
    return document


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
