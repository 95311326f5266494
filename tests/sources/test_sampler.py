"""The sampler: sources on their own cadences, a hung one never delays the others or the tick."""

from __future__ import annotations

import asyncio

import pytest

from specmon.errors import Unreachable
from specmon.model import Sample
from specmon.sources.sampler import PollSource, Sampler, next_deadline


@pytest.mark.parametrize(
    ("previous", "every", "now", "expected"),
    [(0.0, 1.0, 0.2, 1.0), (0.0, 1.0, 1.0, 2.0), (0.0, 1.0, 3.7, 4.0), (10.0, 0.5, 10.1, 10.5)],
)
def test_deadlines_are_drift_free_and_skip_missed_ticks(
    previous: float, every: float, now: float, expected: float
) -> None:
    assert next_deadline(previous, every, now) == pytest.approx(expected)


async def test_values_errors_and_ages() -> None:
    now = [100.0]
    calls = {"n": 0}

    async def flaky() -> int:
        calls["n"] += 1
        if calls["n"] == 2:
            raise Unreachable("http://s: connection refused")
        return calls["n"]

    async def broken() -> int:
        raise KeyError("bug")

    source, bug = PollSource("m", flaky, 1.0), PollSource("b", broken, 1.0)
    sampler = Sampler([source, bug], interval=1.0, clock=lambda: now[0], wall=lambda: 5.0)
    await sampler.poll_once(source)
    now[0] = 101.0
    await sampler.poll_once(source)
    await sampler.poll_once(bug)
    sample = sampler.sample()
    reading = sample.readings["m"]
    assert (reading.value, reading.seq, reading.at) == (1, 1, 100.0)  # the last good value stays
    assert reading.error == "http://s: connection refused"
    assert sample.age("m") == 1.0
    assert sample.readings["b"].error == "internal error in b: KeyError('bug')"
    await sampler.poll_once(source)
    assert sampler.sample().readings["m"].error is None
    assert sampler.sample().value("m") == 3


async def test_a_hung_source_does_not_stop_ticks_or_other_sources() -> None:
    release = asyncio.Event()
    fast_reads = asyncio.Event()
    samples: list[Sample] = []

    async def hung() -> str:
        await release.wait()
        return "late"

    async def fast() -> str:
        return "ok"

    sampler = Sampler(
        [PollSource("hung", hung, 0.01), PollSource("fast", fast, 0.01)], interval=0.01
    )

    def emit(sample: Sample) -> None:
        samples.append(sample)
        if sample.readings["fast"].seq >= 5:
            fast_reads.set()

    task = asyncio.create_task(sampler.run(emit))
    await asyncio.wait_for(fast_reads.wait(), 10)
    assert samples[-1].value("hung") is None
    assert samples[-1].value("fast") == "ok"
    release.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
