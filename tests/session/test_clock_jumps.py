"""Clock jumps: neither the server host's clock nor this machine's fakes a restart or an age."""

from __future__ import annotations

from factories import PROTOCOL, a_snapshot, sample, server_info

from specmon.analysis.validity import LifetimeCheck, LifetimeState, baseline_validity
from specmon.model import (
    ProcessStats,
    Reading,
    Sample,
    Snapshot,
    Telemetry,
)
from specmon.session.baselines import BaselineOrigin
from specmon.session.live import LiveState

START = 1_796_000_000.0


def _sample(t: float, pid: int, start_time: float) -> Sample:
    process = ProcessStats(pid, "python3", start_time, 50.0, 2**30, 30000)
    telemetry = Telemetry("nvml", "NVML on this machine", server_process=process)
    return sample(
        t, info=server_info("plain"), telemetry=Reading(telemetry, t, int(t)), wall=START + t
    )


def _restarts(live: LiveState) -> list[str]:
    return [e.text for e in live.events if "restarted" in e.text]


def test_the_server_hosts_clock_jumping_is_not_a_restart() -> None:
    """psutil counts start times from a boot time that follows the wall clock: an NTP step moves
    the same process's start time."""
    live = LiveState("http://h:1", PROTOCOL, max_age_s=1800, probe_every=10)
    live.on_sample(_sample(1, 4100, START))
    live.on_sample(_sample(2, 4100, START + 3600))  # the clock jumped an hour ahead
    live.on_sample(_sample(3, 4100, START - 86400))  # and a day back
    assert _restarts(live) == []
    live.on_sample(_sample(4, 4242, START + 10))  # a new process: that is a restart
    assert _restarts(live) == ["server restarted: its process (pid 4242) is new"]


def _baseline(created_at: float) -> Snapshot:
    return a_snapshot(created_at=created_at, id=3)


def test_a_baseline_from_the_future_has_an_unknown_age() -> None:
    same = LifetimeCheck(LifetimeState.SAME, "the same server process")
    behind = baseline_validity(
        _baseline(START + 7200), server_info("plain"), now=START, lifetime=same
    )
    assert behind.reasons == (
        "taken 2.0 h from now, in the future: the clock moved back since, so its age is unknown",
    )
    near = baseline_validity(_baseline(START + 30), server_info("plain"), now=START, lifetime=same)
    assert near.valid  # two machines' clocks


def test_the_dashboards_clock_moving_back_shows_no_negative_age() -> None:
    live = LiveState("http://h:1", PROTOCOL, max_age_s=1800, probe_every=10)
    live.set_baseline(START, _baseline(START), BaselineOrigin.BASELINE_SERVER)
    view = live.view(START - 3600, stale_after=3)
    assert view.baseline.age_s == 0.0
