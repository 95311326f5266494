"""One target's error stops no other (issue 36 item 3): the fleet restarts the failed session
alone, after a back-off, its state dropped and the error in its events log."""

from __future__ import annotations

import asyncio

from specmon.config import MonitorConfig
from specmon.session.fleet import RETRY_FIRST_S, RETRY_MAX_S, Fleet
from specmon.session.server_session import ServerSession


class Feed:
    """A feed whose `run` raises its first `failures` times, then runs until cancelled."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.runs = 0
        self.cancelled = 0
        self.running = asyncio.Event()

    async def run(self, sink: object) -> None:
        self.runs += 1
        if self.runs <= self.failures:
            raise OverflowError("cannot convert float infinity to integer\nsecond line")
        self.running.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    def follow_baseline_server(self, url: str | None) -> None:
        pass


def _session(url: str, feed: Feed) -> ServerSession:
    return ServerSession.of_config(MonitorConfig(url=url), feed, None)  # type: ignore[arg-type]


async def test_a_failing_session_is_restarted_alone_with_back_off() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    bad, good = Feed(failures=3), Feed(failures=0)
    bad_session = _session("http://bad:1", bad)
    fleet = Fleet([bad_session, _session("http://good:1", good)], sleep=sleep)
    task = asyncio.create_task(fleet.run())
    await asyncio.wait_for(asyncio.gather(bad.running.wait(), good.running.wait()), 10)
    assert bad.runs == 4 and good.runs == 1
    assert fleet.failures == {"http://bad:1": 3}
    assert waits == [RETRY_FIRST_S, RETRY_FIRST_S * 2, RETRY_FIRST_S * 4]
    errors = [e.text for e in bad_session.view().events if e.level == "error"]
    assert errors[-1] == (
        "stopped by an internal error (OverflowError: cannot convert float infinity to integer "
        f"second line); starting again in {RETRY_FIRST_S * 4:g} s"
    )
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert bad.cancelled == good.cancelled == 1


async def test_the_back_off_is_capped_and_starts_over_after_a_long_run() -> None:
    now = [0.0]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    class Slow(Feed):
        async def run(self, sink: object) -> None:
            if self.runs == 9:
                now[0] += RETRY_MAX_S  # the tenth run lasts a good while, then fails
            await super().run(sink)

    feed = Slow(failures=11)
    fleet = Fleet([_session("http://bad:1", feed)], clock=lambda: now[0], sleep=sleep)
    task = asyncio.create_task(fleet.run())
    await asyncio.wait_for(feed.running.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert max(waits) == RETRY_MAX_S
    assert waits[9:] == [RETRY_FIRST_S, RETRY_FIRST_S * 2]
