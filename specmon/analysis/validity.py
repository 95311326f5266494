"""Baseline validity (DESIGN.md §5): same configuration apart from speculation, same protocol,
fresh enough, and the same server lifetime.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specmon.analysis.gpus import gpu_differences
from specmon.model import Protocol, Snapshot

DEFAULT_MAX_AGE_S = 30 * 60.0
CLOCK_SLACK_S = 60.0
"""How far in the future a baseline's time may lie (clocks of two machines) before it is taken
for the sign of a clock that moved back."""

# Args that differ between two launches of the same configuration, so they say nothing about
# whether a baseline applies. Seen on real SGLang 0.5.17 (fixtures/real): a plain restart changes
# `random_seed` and `max_total_num_tokens` (sized from free memory at start); turning speculation
# on changes the resolved `cuda_graph_config` (its batch-size list) though no flag changed.
VOLATILE_KEYS = frozenset(
    {
        "host",
        "port",
        "api_key",
        "admin_api_key",
        "ssl_keyfile_password",
        "log_level",
        "log_level_http",
        "log_requests",
        "log_requests_level",
        "random_seed",
        "launch_command",
        "nccl_port",
        "dist_init_addr",
        "file_storage_path",
        "max_total_num_tokens",
        "max_req_input_len",
        "cuda_graph_config",
        "decode_log_interval",
        "enable_metrics",
        "enable_metrics_for_all_schedulers",
        "crash_dump_folder",
        "watchdog_timeout",
    }
)


def config_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The args that define a configuration: all but speculative and volatile ones."""
    return {
        k: v for k, v in args.items() if not k.startswith("speculative_") and k not in VOLATILE_KEYS
    }


def fingerprint(args: Mapping[str, Any]) -> str:
    """A short stable hash of `config_args`: equal for a baseline and its speculative runs."""
    text = json.dumps(config_args(args), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Config keys whose values differ (or exist on one side only), sorted."""
    ca, cb = config_args(a), config_args(b)
    return sorted(k for k in ca.keys() | cb.keys() if ca.get(k, _ABSENT) != cb.get(k, _ABSENT))


_ABSENT = object()


def protocol_differences(a: Protocol, b: Protocol) -> list[str]:
    """Protocol fields that differ (runs and warm-up do not change what a run measures)."""
    names = ("max_tokens", "temperature", "prompt")
    return [n for n in names if getattr(a, n) != getattr(b, n)]


@dataclass(frozen=True, slots=True)
class Validity:
    """Whether a baseline applies, with every reason it does not."""

    reasons: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    """Differences that do not invalidate it but weigh on the comparison (GPU conditions)."""

    @property
    def valid(self) -> bool:
        """True when no reason was found."""
        return not self.reasons


def baseline_validity(
    baseline: Snapshot,
    run: Snapshot,
    *,
    now: float,
    max_age_s: float = DEFAULT_MAX_AGE_S,
    restarted: bool = False,
) -> Validity:
    """Check a baseline against a run (DESIGN.md §5).

    Args:
        baseline: The baseline snapshot (speculation off).
        run: The snapshot it is compared with.
        now: Current unix time (for age).
        max_age_s: Older baselines are stale.
        restarted: The caller saw the baseline server restart since the snapshot.
    """
    reasons: list[str] = []
    if baseline.server.speculative is not None:
        reasons.append("the baseline ran with speculation on")
    if baseline.server.model != run.server.model:
        reasons.append(f"different model ({baseline.server.model} vs {run.server.model})")
    keys = differing_keys(baseline.server.args, run.server.args)
    if keys:
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        reasons.append(f"flags differ: {shown}")
    differences = protocol_differences(baseline.protocol, run.protocol)
    if differences:
        reasons.append("different protocol: " + ", ".join(differences))
    age = now - baseline.created_at
    if age < -CLOCK_SLACK_S:
        reasons.append(
            f"taken {-age / 60:.0f} min from now, in the future: the clock moved back since, "
            "so its age is unknown"
        )
    elif age > max_age_s:
        reasons.append(f"too old ({age / 60:.0f} min > {max_age_s / 60:.0f} min)")
    if restarted:
        reasons.append("the baseline server restarted since")
    return Validity(tuple(reasons), tuple(gpu_differences(baseline.gpu, run.gpu)))
