"""The one session of a watched server: its feed's sink, its baseline decisions, its Views."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from factories import sample, server_info

from specmon.config import FleetTarget, MonitorConfig, Targets
from specmon.history import MarkKind
from specmon.measure.snapshot import SnapshotKind
from specmon.model import Sample
from specmon.session.baselines import BaselineOrigin
from specmon.session.feed import FeedSink
from specmon.session.recording import Header, RecordingWriter, read_recording
from specmon.session.server_session import ServerSession, dashboard_session
from specmon.session.view import View
from specmon.storage import history_store
from specmon.storage.store import Store
from specmon.target import Target

URL = "http://10.1.230.174:8000"
NOW = 1_796_023_200.0
CONFIG = MonitorConfig(url=URL, probe_tokens=256)


class _Feed:
    """A feed that does nothing but note the benches asked of it."""

    def __init__(self) -> None:
        self.benches: list[tuple[SnapshotKind, str, BaselineOrigin | None]] = []

    async def run(self, sink: FeedSink) -> None: ...

    def follow_baseline_server(self, url: str | None) -> None: ...

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        self.benches.append((kind, url, origin))

    def cancel_bench(self) -> bool:
        return True

    def pause_probe(self, paused: bool) -> None: ...


class _NotesFeed(_Feed):
    """A feed whose run reports twenty bench notes."""

    async def run(self, sink: FeedSink) -> None:
        for i in range(20):
            sink.bench_note(NOW + i, "a note of some length " * 2)


def _session(config: MonitorConfig = CONFIG, **kwargs: bool) -> tuple[ServerSession, _Feed]:
    feed = _Feed()
    target = FleetTarget(config.url, config.baseline_url)
    return ServerSession(target, config, feed, None, wall=lambda: NOW, **kwargs), feed


def _sample(t: float, kind: str) -> Sample:
    return sample(t, info=server_info(kind), metrics=None, seq=int(t), wall=NOW - 100 + t)


def test_a_view_goes_to_whoever_shows_the_server_after_every_input() -> None:
    session, _ = _session()
    session.sample(_sample(1.0, "spec"))  # nobody shows it: no View is built
    views: list[View] = []
    session.on_view = views.append
    session.sample(_sample(2.0, "spec"))
    session.probe_failed(NOW, "HTTP 503")
    assert len(views) == 2
    assert views[-1].identity == session.view().identity


def test_the_baseline_waited_for_is_taken_when_the_server_comes_back_plain() -> None:
    """`b` on a speculative server, "wait": the session (not the screen) starts the bench at the
    first sample without speculation."""
    session, feed = _session()
    session.sample(_sample(1.0, "spec"))
    assert session.baseline_origin() is None  # the user's to choose
    session.wait_for_plain()
    session.sample(_sample(2.0, "spec"))
    assert feed.benches == []
    session.sample(_sample(3.0, "plain"))
    assert feed.benches == [(SnapshotKind.BASELINE, URL, BaselineOrigin.THIS_SERVER)]
    assert not session.live.baseline.waiting
    assert session.live.bench is not None
    assert "taking the baseline" in session.live.events[-1].text


def test_where_a_baseline_comes_from() -> None:
    with_server = replace(CONFIG, baseline_url="http://10.1.230.174:8001")
    assert _session(with_server)[0].baseline_origin() == BaselineOrigin.BASELINE_SERVER
    assert _session(relaunches=True)[0].baseline_origin() == BaselineOrigin.RELAUNCHED
    session, feed = _session()
    assert session.baseline_origin() is None  # no server info yet
    session.sample(_sample(1.0, "plain"))
    assert session.baseline_origin() == BaselineOrigin.THIS_SERVER
    session, feed = _session(with_server)
    session.take_baseline(BaselineOrigin.BASELINE_SERVER)
    assert feed.benches == [
        (SnapshotKind.BASELINE, "http://10.1.230.174:8001", BaselineOrigin.BASELINE_SERVER)
    ]


def test_telemetry_that_cannot_be_set_up_is_a_warning_not_a_failed_probe() -> None:
    session, _ = _session()
    session.telemetry_failed(NOW, "GPU telemetry: no NVML")
    assert session.live.probe_error is None and session.probes_failed == 0
    assert session.live.events[-1].level == "warn"


async def test_a_recording_that_stops_early_says_why_in_the_events_log(tmp_path: Path) -> None:
    """The size cap ends the recording; the session says so in its View (no screen needed)."""
    writer = RecordingWriter(tmp_path / "r.jsonl", Header(URL, NOW, 1.0), max_bytes=600)
    session = ServerSession.of_config(
        CONFIG, _NotesFeed(), None, recording=writer, wall=lambda: NOW
    )
    assert session.recording is writer
    views: list[View] = []
    session.on_view = views.append
    await session.run()
    said = [e.text for e in session.live.events if e.text.startswith("recording stopped")]
    assert said == ["recording stopped: the size cap (0 MB) was reached"]
    assert any(e.text == said[0] for e in views[-1].events)
    assert read_recording(tmp_path / "r.jsonl").ended == writer.stopped  # closed by the feed


async def test_the_dashboard_session_keeps_the_lasting_history_while_it_runs(
    tmp_path: Path,
) -> None:
    """The command's session decides: its own sampling, history on and a store to keep it in."""
    targets = Targets(Target(URL))
    with Store(tmp_path / "db") as store:
        assert dashboard_session(CONFIG, targets, store).records_history
        assert not dashboard_session(replace(CONFIG, history=False), targets, store).records_history
        assert not dashboard_session(CONFIG, targets, None).records_history
        assert not ServerSession.of_config(CONFIG, _Feed(), store).records_history  # a web tab's
        session = ServerSession.of_config(
            CONFIG, _Feed(), store, records_history=True, wall=lambda: NOW
        )
        assert session.history is None  # not before it runs
        await session.run()
        assert session.history is not None
        session.close()  # writes what the writer held
        marks = history_store.marks(store, URL, 0, NOW + 1)
    assert [m.kind for m in marks] == [MarkKind.WATCH]
