"""The verdict's changes are the session's events (issue 37): said once in its events log, so the
dashboard, a fleet's rows, the exporter and a replay all have them, and counted for the bell."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from specmon.analysis.comparison import Verdict
from specmon.session.server_session import ServerSession
from specmon.session.view import View
from tests.session.test_server_session import _sample, _session


def _given(
    session: ServerSession, monkeypatch: pytest.MonkeyPatch, runs: int
) -> Callable[[Verdict | None], View]:
    """Make the session's state give `verdict` with `runs` current probes, by hand."""
    live = session.live
    plain = live.view(session.wall(), 3.0)

    def give(verdict: Verdict | None) -> View:
        view = replace(
            plain,
            events=tuple(live.events),
            spec=replace(plain.spec, verdict=verdict),
            baseline=replace(plain.baseline, current_runs=runs),
        )
        monkeypatch.setattr(live, "view", lambda *_: view)
        return session.view()

    return give


def _said(session: ServerSession) -> list[str]:
    return [e.text for e in session.live.events if e.text.startswith("verdict: ")]


def test_a_changed_verdict_is_said_once_in_the_events_log_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session, _ = _session()
    session.sample(_sample(1.0, "spec"))
    give = _given(session, monkeypatch, runs=3)
    counts = []
    for verdict in (
        Verdict.WINNING,
        Verdict.WINNING,
        None,  # a gap without one (a stale baseline's) is no change
        Verdict.WINNING,
        Verdict.LOSING,
        Verdict.LOSING,
        Verdict.WITHIN_NOISE,
    ):
        view = give(verdict)
        counts.append(session.verdict_changes)
    assert counts == [0, 0, 0, 0, 1, 1, 2]
    assert _said(session) == ["verdict: winning → losing", "verdict: losing → within noise"]
    assert view.events[-1].text == "verdict: losing → within noise"  # in the View it came with
    assert view.events[-1].level == "warn"


def test_a_first_probes_verdict_is_no_change_and_a_rewind_forgets_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session, _ = _session()
    session.sample(_sample(1.0, "spec"))
    give = _given(session, monkeypatch, runs=1)
    give(Verdict.WINNING)
    give(Verdict.LOSING)
    assert session.verdict_changes == 0  # on an assumed spread: neither is taken
    give = _given(session, monkeypatch, runs=2)
    give(Verdict.WINNING)
    session.rewind()  # a replay seeking back: the state is rebuilt from the first input
    give = _given(session, monkeypatch, runs=2)
    give(Verdict.LOSING)
    assert session.verdict_changes == 0 and _said(session) == []
