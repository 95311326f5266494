"""Baseline validity (docs/design.md §5): same configuration apart from speculation, same protocol,
fresh enough, and the same server lifetime. Every surface asks `baseline_validity` (a live server,
judged now) or `snapshot_validity` (a stored pair, judged when its run was taken).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from specmon.analysis.conditions import Conditions, condition_differences, conditions_of
from specmon.analysis.gpus import gpu_differences
from specmon.backend_facts import display_name
from specmon.model import GpuState, Lifetime, Protocol, ServerInfo, ServerMetrics, Snapshot
from specmon.wording import duration

DEFAULT_MAX_AGE_S = 30 * 60.0
CLOCK_SLACK_S = 60.0
"""How far in the future a baseline's time may lie (clocks of two machines) before it is taken
for the sign of a clock that moved back."""

# Args that differ between two launches of the same configuration, so they say nothing about
# whether a baseline applies. Seen on real SGLang 0.5.17 (tests/fixtures): a plain restart changes
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
    return {k: v for k, v in args.items() if _is_config_key(k)}


def _is_config_key(key: str) -> bool:
    return key not in VOLATILE_KEYS and not key.startswith("speculative_")


def launch_hash(args: Mapping[str, Any]) -> str:
    """A short hash of every reported arg, volatile ones included: one launch's identity."""
    text = json.dumps(dict(args), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def fingerprint(args: Mapping[str, Any]) -> str:
    """A short stable hash of `config_args`: equal for a baseline and its speculative runs."""
    text = json.dumps(config_args(args), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def another_backend(baseline: ServerInfo, server: ServerInfo) -> str | None:
    """ "another backend (SGLang baseline, vLLM server)" when the two are different backends,
    else None: one reason, said instead of their flags (two backends share few flag names, so
    every one would differ)."""
    if baseline.backend == server.backend:
        return None
    names = f"{display_name(baseline.backend)} baseline, {display_name(server.backend)} server"
    return f"another backend ({names})"


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Config keys whose values differ (or exist on one side only), sorted."""
    # Compared first, told apart after: a server reports ~450 args and few differ (every View of
    # a server with a baseline asks, each second).
    differ = [k for k, v in a.items() if b.get(k, _ABSENT) != v]
    differ.extend(b.keys() - a.keys())
    return sorted(k for k in differ if _is_config_key(k))


_ABSENT = object()


def protocol_differences(a: Protocol, b: Protocol) -> list[str]:
    """Protocol fields that differ (runs and warm-up do not change what a run measures)."""
    names = ("max_tokens", "temperature", "prompt", "concurrency")
    return [n for n in names if getattr(a, n) != getattr(b, n)]


LIFETIME_COUNTERS = (
    "generation_tokens_total",
    "prompt_tokens_total",
    "num_requests_total",
    "spec_verify_calls_total",
    "realtime_decode_tokens_total",
    "decode_seconds_total",
)
"""Cumulative counters kept with a snapshot: a lower value later means the server restarted."""
START_SLACK_S = 1.0
"""Two readings of one process's start time agree within this (start times are derived from a
boot time that follows the wall clock)."""


def lifetime_of(
    info: ServerInfo, metrics: ServerMetrics | None, started_at: float | None = None
) -> Lifetime:
    """A server's launch markers now: its args, its process start and its counters.

    Args:
        info: Its server info.
        metrics: A /metrics scrape, or None (metrics off).
        started_at: The process start from psutil or the agent, when known; else the one
            /metrics serves (vLLM's `process_start_time_seconds`).
    """
    counters: tuple[tuple[str, float], ...] = ()
    if metrics is not None:
        counters = tuple(
            (name, value)
            for name in LIFETIME_COUNTERS
            if (value := getattr(metrics, name)) is not None
        )
        if started_at is None:
            started_at = metrics.process_start_time
    return Lifetime(launch_hash(info.args), started_at, counters)


class LifetimeState(StrEnum):
    """Whether the baseline server is still the lifetime the baseline measured."""

    SAME = "same"
    RESTARTED = "restarted"
    UNVERIFIED = "unverified"
    """It cannot be told: unreachable, metrics off on a remote server, an older record."""
    RELAUNCHED = "relaunched"
    """Taken on this very address with speculation off: the server was relaunched with
    speculation since, by design, so its lifetime says nothing."""


@dataclass(frozen=True, slots=True)
class LifetimeCheck:
    """The answer of `lifetime_check`, with its evidence."""

    state: LifetimeState
    detail: str
    since: float | None = None
    """When the restart's new process started (epoch seconds), where its start time is known."""

    def as_of(self, when: float) -> LifetimeCheck:
        """This check as it bears on a run taken at `when` (a stored pair, judged at its time).

        A restart whose new process started after the run came after it: it does not make the
        baseline stale for that run, but whether the server also restarted between the baseline
        and the run is not recorded, so the pair is unverified rather than valid.
        """
        if self.state != LifetimeState.RESTARTED or self.since is None or self.since <= when:
            return self
        return LifetimeCheck(
            LifetimeState.UNVERIFIED,
            f"the baseline server restarted after the run ({duration(self.since - when)} "
            "after it); whether it also did between the baseline and the run is not recorded",
        )


def relaunched_for_speculation() -> LifetimeCheck:
    """The baseline was taken at this address before the server was relaunched with speculation."""
    return LifetimeCheck(
        LifetimeState.RELAUNCHED,
        "taken on this address before the server was relaunched with speculation",
    )


def lifetime_check(
    recorded: Lifetime | None, observed: Lifetime | None, *, unreachable: str | None = None
) -> LifetimeCheck:
    """Compare the baseline server's launch markers now with those kept with the baseline.

    A different process start time, counters that went down or a different launch hash (SGLang
    draws a new `random_seed` at each start) prove a restart. Without any of those, the same
    start time proves the same lifetime; counters that grew, with the same args, are taken for
    it. With
    neither (metrics off, the server on another machine without an agent) it is unverified.

    Args:
        recorded: `Snapshot.lifetime` of the baseline (None in records older than lifetimes).
        observed: `lifetime_of` the baseline server now; None when it could not be read.
        unreachable: Why it could not be read.
    """
    if recorded is None:
        return LifetimeCheck(
            LifetimeState.UNVERIFIED, "the baseline was saved without its server's launch markers"
        )
    if observed is None:
        why = f": {unreachable}" if unreachable else ""
        return LifetimeCheck(LifetimeState.UNVERIFIED, f"the baseline server cannot be read{why}")
    moved = None
    if recorded.started_at is not None and observed.started_at is not None:
        moved = abs(recorded.started_at - observed.started_at) > START_SLACK_S
    if moved:
        return LifetimeCheck(
            LifetimeState.RESTARTED,
            "the baseline server restarted since (a new process)",
            observed.started_at,
        )
    before = dict(recorded.counters)
    went_down = sorted(n for n, v in observed.counters if n in before and v < before[n])
    if went_down:
        return LifetimeCheck(
            LifetimeState.RESTARTED,
            f"the baseline server restarted since (its counters went down: {went_down[0]})",
        )
    if recorded.launch != observed.launch:
        return LifetimeCheck(
            LifetimeState.RESTARTED,
            "the baseline server restarted since (a new launch: its reported args changed)",
        )
    if moved is False:
        return LifetimeCheck(LifetimeState.SAME, "the same server process")
    if before and any(n in before for n, _ in observed.counters):
        return LifetimeCheck(LifetimeState.SAME, "the same args and counters that only grew")
    return LifetimeCheck(
        LifetimeState.UNVERIFIED,
        "the baseline server's restarts cannot be seen (no /metrics counters and no process "
        "start time: run specmon on its machine, or `specmon agent` there)",
    )


class ValidityState(StrEnum):
    """A baseline's standing in one word (the exporter's `specmon_baseline_state`)."""

    VALID = "valid"
    """It applies, and every rule could be checked: a clean ✓."""
    UNVERIFIED = "unverified"
    """It applies as far as is known, but its server's lifetime could not be checked, or the
    two sides ran under different conditions (`Validity.conditions`): ?."""
    STALE = "stale"
    """At least one rule fails: ✗ with the reasons."""


@dataclass(frozen=True, slots=True)
class Validity:
    """Whether a baseline applies, with every reason it does not."""

    reasons: tuple[str, ...]
    """Why it does not apply (stale); empty when it does."""
    unverified: tuple[str, ...] = ()
    """What could not be checked: it applies as far as is known, but not certainly."""
    warnings: tuple[str, ...] = ()
    """Differences that do not invalidate it but weigh on the comparison (GPU conditions)."""
    conditions: tuple[str, ...] = ()
    """How the two sides' conditions differed (`analysis.conditions`): the server's load beside
    them, a client starved of CPU. It still applies, but the comparison is not like for like:
    no clean ✓."""

    @property
    def valid(self) -> bool:
        """True when no reason was found."""
        return not self.reasons

    @property
    def confirmed(self) -> bool:
        """Valid, every rule could be checked and both sides ran under like conditions: only
        then is it a clean ✓."""
        return not self.reasons and not self.unverified and not self.conditions

    @property
    def state(self) -> ValidityState:
        """Stale when a rule fails (whatever could not be checked), else unverified when
        something could not be checked or the conditions differed, else valid."""
        if self.reasons:
            return ValidityState.STALE
        if self.unverified or self.conditions:
            return ValidityState.UNVERIFIED
        return ValidityState.VALID


def baseline_validity(
    baseline: Snapshot,
    server: ServerInfo,
    *,
    now: float,
    lifetime: LifetimeCheck,
    max_age_s: float = DEFAULT_MAX_AGE_S,
    protocol: Protocol | None = None,
    gpu: GpuState | None = None,
    conditions: Conditions | None = None,
) -> Validity:
    """Check a baseline against a live server, now (docs/design.md §5).

    Age, flags and model need only the server's info; the protocol and GPU state are checked
    when the other side has them (a run, or a probe's protocol). A stored run is judged at its
    own time instead: `snapshot_validity`.

    Args:
        baseline: The baseline snapshot (speculation off).
        server: The speculative server's info now.
        now: Current unix time: the baseline's age is counted to it.
        lifetime: Whether the baseline server restarted since (`lifetime_check`).
        max_age_s: Older baselines are stale.
        protocol: The other side's bench protocol, when there is one.
        gpu: The GPU state of the other side, when known.
        conditions: The conditions the other side's runs ran under (`conditions_of` the
            probes compared), when known; compared with the baseline's runs'.
    """
    age = now - baseline.created_at
    stale = None
    if age < -CLOCK_SLACK_S:
        stale = (
            f"taken {duration(-age)} from now, in the future: the clock moved back since, "
            "so its age is unknown"
        )
    elif age > max_age_s:
        stale = f"too old ({duration(age)} > {duration(max_age_s)})"
    return _validity(baseline, server, stale, lifetime, protocol, gpu, (conditions, "probe"))


def snapshot_validity(
    base: Snapshot, spec: Snapshot, *, max_age_s: float, lifetime: LifetimeCheck
) -> Validity:
    """Whether `base` applied to the stored run `spec` when `spec` was taken.

    The pair's age is the gap between the two snapshots, however long ago both were taken; a
    baseline taken after the run never applies to it (by then the run's server was gone, or
    another launch). The protocol, GPU state and conditions are the run's.
    """
    gap = spec.created_at - base.created_at
    stale = None
    if gap < 0:
        stale = f"taken {duration(-gap)} after the run: a baseline applies to the runs after it"
    elif gap > max_age_s:
        stale = f"too old: taken {duration(gap)} before the run (> {duration(max_age_s)})"
    run_conditions = conditions_of(run.conditions for run in spec.runs)
    return _validity(
        base, spec.server, stale, lifetime, spec.protocol, spec.gpu, (run_conditions, "run")
    )


def _validity(
    baseline: Snapshot,
    server: ServerInfo,
    stale: str | None,
    lifetime: LifetimeCheck,
    protocol: Protocol | None,
    gpu: GpuState | None,
    conditions: tuple[Conditions | None, str],
) -> Validity:
    """Every rule of docs/design.md §5 but the age, which the caller judged (`stale`: why not);
    `conditions`: the other side's and what to call it ("probe", "run")."""
    reasons: list[str] = []
    if baseline.server.speculative is not None:
        reasons.append("the baseline ran with speculation on")
    if baseline.server.model != server.model:
        reasons.append(f"different model ({baseline.server.model} vs {server.model})")
    backend = another_backend(baseline.server, server)
    keys = [] if backend else differing_keys(baseline.server.args, server.args)
    if backend:
        reasons.append(backend)
    elif keys:
        reasons.append(f"flags differ: {_keys_text(keys)}")
    if protocol is not None:
        differences = protocol_differences(baseline.protocol, protocol)
        if differences:
            reasons.append("different protocol: " + ", ".join(differences))
    if stale is not None:
        reasons.append(stale)
    unverified: tuple[str, ...] = ()
    if lifetime.state == LifetimeState.RESTARTED:
        reasons.append(lifetime.detail)
    elif lifetime.state == LifetimeState.UNVERIFIED:
        unverified = (lifetime.detail,)
    other, name = conditions
    differ = () if other is None else _differences(baseline, other, name)
    return Validity(tuple(reasons), unverified, tuple(gpu_differences(baseline.gpu, gpu)), differ)


def rejudged_conditions(
    validity: Validity, baseline: Snapshot, conditions: Conditions, name: str = "probe"
) -> Validity:
    """`validity` with the conditions judged again, over more of the other side's runs (the
    probes `check` takes after its first): the rest of it stands."""
    return replace(validity, conditions=_differences(baseline, conditions, name))


def _differences(baseline: Snapshot, other: Conditions, name: str) -> tuple[str, ...]:
    base = conditions_of(run.conditions for run in baseline.runs)
    return tuple(condition_differences(base, other, name))


def _keys_text(keys: Sequence[str]) -> str:
    return ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
