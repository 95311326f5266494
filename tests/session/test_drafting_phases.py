"""Issue 27's done-means: the simulator in adaptive mode, load rising 1 → 16 → 1 streams from a
background load generator; the dashboard's View, the fleet row, the exporter and `check --json`
show the effective draft length and duty cycle of each phase within 2% of the simulator's
truth (its record of every decode step), and exactly one switch event per change.

Scrapes are taken when the load generator has finished a number of requests, never on wall
time; the samples carry a fake clock 5 s apart, so the dashboard's 10 s window holds the last
two intervals of each phase.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx
import pytest
from factories import sample
from prometheus_client.parser import text_string_to_metric_families
from watching import ADAPTIVE, check_json

from specmon.analysis.drafting import OFF_SHARE
from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.metrics import ExportedTarget, render
from specmon.model import ServerInfo
from specmon.session.fleet_row import fleet_row
from specmon.session.server_session import ServerSession
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import Backend, connect
from specmon.target import Target

pytestmark = pytest.mark.slow  # the simulator under rising load: ~5 s a test

TOKENS = 64
STEP_S = 5.0  # the fake clock between two scrapes
INTERVALS = 4  # scrapes per phase: the last two are the dashboard's window (RATE_SPAN_S 10 s)


@dataclass(frozen=True)
class Truth:
    """What the simulator drafted in a window of its event-loop clock."""

    draft_length: float | None
    duty_cycle: float


def truth(sim: SimServer, start: float, end: float) -> Truth:
    """Every decode step of every request, finished or running, whose deadline falls in
    (start, end] of the model's clock."""
    engine = sim.state.engine
    records = [*sim.emitted, *(r.record for r in (*engine.running, *engine.waiting))]
    drafts = [
        d
        for r in records
        for at, d in zip(r.step_deadlines[1:], r.step_drafts, strict=False)
        if start < at <= end
    ]
    drafted = [d for d in drafts if d]
    assert len(drafts) > 50, f"too few steps in ({start}, {end}]: {len(drafts)}"
    return Truth(sum(drafted) / len(drafted) if drafted else None, len(drafted) / len(drafts))


def close(value: float | None, expected: float, what: str) -> None:
    assert value is not None, what
    assert value == pytest.approx(expected, rel=0.02, abs=0.02), what


def same_drafting(k: float | None, duty: float | None, expected: Truth, what: str) -> None:
    """Within 2% of the truth: the duty cycle always; the draft length while the simulator
    drafted most steps (a phase "off" is off: the few steps a dip of the batch below the bucket
    drafted have no draft length to show)."""
    close(duty, expected.duty_cycle, f"{what}: duty cycle")
    if expected.duty_cycle >= OFF_SHARE:
        assert expected.draft_length is not None
        close(k, expected.draft_length, f"{what}: draft length")


class Load:
    """A background load generator: `n` streams, each a request after the other."""

    def __init__(self, client: httpx.AsyncClient, backend: str) -> None:
        self.client, self.backend = client, backend
        self.streams: list[tuple[asyncio.Task[None], asyncio.Event]] = []
        self.done = 0
        self._finished = asyncio.Condition()

    async def set_streams(self, n: int) -> None:
        """Run `n` streams from now on; returns once the streams beyond `n` have ended."""
        while len(self.streams) < n:
            stop = asyncio.Event()
            self.streams.append((asyncio.create_task(self._stream(stop)), stop))
        ending = self.streams[n:]
        for _, stop in ending:
            stop.set()  # it ends after its current request
        self.streams = self.streams[:n]
        await asyncio.gather(*(task for task, _ in ending))

    async def completions(self, n: int) -> None:
        async with self._finished:
            target = self.done + n
            await self._finished.wait_for(lambda: self.done >= target)

    async def stop(self) -> None:
        for task, _ in self.streams:
            task.cancel()
        await asyncio.gather(*(t for t, _ in self.streams), return_exceptions=True)

    async def _stream(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            # Lengths spread over 48-111 tokens: streams do not end in waves (all at once, the
            # batch would empty and refill, drafting at every small batch on the way).
            tokens = 48 + (self.done * 37) % 64
            if self.backend == "vllm":
                path, body = "/v1/completions", {"prompt": "load", "max_tokens": tokens}
                body |= {"ignore_eos": True, "stream": True}
            else:
                params = {"max_new_tokens": tokens, "ignore_eos": True}
                path, body = "/generate", {"text": "load", "stream": True}
                body["sampling_params"] = params
            async with self.client.stream("POST", path, json=body) as response:
                async for _ in response.aiter_lines():
                    pass
            async with self._finished:
                self.done += 1
                self._finished.notify_all()


class Watcher:
    """The dashboard's session of the server, fed one scrape at a time on a fake clock."""

    def __init__(self, sim: SimServer, url: str, backend: Backend, info: ServerInfo) -> None:
        self.sim = sim
        self.t = 0.0
        self.loop_times: list[float] = []
        """The simulator's model time at each scrape: the steps its counters hold."""
        self.backend, self.info = backend, info
        config = MonitorConfig(url=url, interval=STEP_S, probe=False)
        self.session = ServerSession.of_target(
            FleetTarget(url), Target(url), config, None, probing=False, wall=lambda: 1000.0 + self.t
        )

    async def tick(self, client: httpx.AsyncClient, running: int = 0) -> None:
        """A scrape once its running gauge shows `running` requests (a stream's next request
        has arrived and decoded a step: the gauge then says the phase's load, as a scrape at any
        time mostly would). The gauge, not the engine's list: vLLM sets it at each decode step,
        so a request that has only prefilled is not in it yet (a busy machine's scrape could
        fall in that gap and read the light phase as idle)."""
        for _ in range(2_000):  # bounded: a stream's next request decodes within milliseconds
            metrics = await self.backend.metrics(client)
            if (metrics.num_running_reqs or 0) >= running:
                break
            await asyncio.sleep(0.005)
        self.loop_times.append(self.sim.state.engine.model_time)
        self.t += STEP_S
        self.session.sample(
            sample(self.t, info=self.info, metrics=metrics, seq=len(self.loop_times))
        )


def exported(text: str, name: str) -> float | None:
    values = [
        s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name
    ]
    return values[0] if values else None


@pytest.mark.parametrize("backend", ["sglang", "vllm"])
async def test_load_rising_and_falling_shows_each_phase_and_each_switch(backend: str) -> None:
    async with (
        SimServer(SimConfig(**{**ADAPTIVE.__dict__, "backend": backend})) as sim,
        httpx.AsyncClient(base_url=sim.url, timeout=30.0) as client,
    ):
        found, info = await connect(client)
        watcher = Watcher(sim, sim.url, found, info)
        load = Load(client, backend)
        await watcher.tick(client)
        try:
            for streams in (1, 16, 1):
                await load.set_streams(streams)
                for _ in range(INTERVALS):
                    await load.completions(3 * streams)
                    await watcher.tick(client, streams)
                start, end = watcher.loop_times[-3], watcher.loop_times[-1]
                expected = truth(sim, start, end)
                view = watcher.session.view()
                drafting = view.spec.drafting
                assert drafting is not None
                phase = f"{streams} streams"
                same_drafting(
                    drafting.draft_length, drafting.duty_cycle, expected, f"View, {phase}"
                )
                assert drafting.off == (expected.duty_cycle < OFF_SHARE)
                row = fleet_row("sim", view)
                same_drafting(row.draft_length, row.duty_cycle, expected, f"fleet row, {phase}")
                assert row.drafting_differs == ("off" if drafting.off else None)  # spec cell
                text = render([ExportedTarget(watcher.session)]).decode()
                same_drafting(
                    exported(text, "specmon_effective_draft_length"),
                    exported(text, "specmon_drafting_duty_cycle"),
                    expected,
                    f"exporter, {phase}",
                )
                before = sim.state.engine.model_time
                body = await check_json(sim.url, TOKENS)
                checked = truth(sim, before, sim.state.engine.model_time)
                json_drafting = body["drafting"]
                same_drafting(
                    json_drafting["effective_draft_length"],
                    json_drafting["duty_cycle"],
                    checked,
                    f"check --json, {phase}",
                )
                assert json_drafting["configured_draft_length"] == 3
        finally:
            await load.stop()
        # By load: the light bands draft k = 3, the bands from 8 running requests do not.
        bands = watcher.session.live.server.drafting.by_load()
        light, heavy = bands[0], bands[-1]
        assert light.start == 1 and heavy.start >= 8, bands
        assert not light.off and light.draft_length == pytest.approx(3.0, rel=0.02)
        assert light.accept_length is not None and light.accept_length > 1
        assert heavy.off  # its ramp intervals drafted a little: an accept length of theirs
        for band in (light, heavy):
            assert band.tok_s is not None and band.per_request_tok_s is not None
        switches = [e.text for e in watcher.session.live.events if "drafting" in e.text]
        assert len(switches) == 2, switches
        assert switches[0].startswith("server: drafting k 3 → off (speculation off at this load")
        assert switches[1].startswith("server: drafting off → k 3")
        assert text.count("specmon_drafting_switches_total") >= 1
        assert exported(text, "specmon_drafting_switches_total") == 2
