"""One baseline rule on every surface: random stores (several servers, protocols, concurrencies,
dead baseline servers, pinned baselines) through the dashboard's lookup (the fleet's, the
exporter's and `--once`'s: the same `ServerSession`), `check`'s (a `ServerSession` too:
`CheckSession`) and `whatif`'s (`find_baseline`),
and for stored pairs the `c` screen's and `snapshots export`'s rows and `snapshots compare`."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapshots import ARGS, PROTOCOL, T0, baseline, speculative

from specmon.analysis.baseline_rule import Pin
from specmon.analysis.validity import LifetimeCheck, LifetimeState, snapshot_validity
from specmon.check import CheckSession
from specmon.config import FleetTarget, MonitorConfig
from specmon.model import Snapshot
from specmon.probe_prompts import DEFAULT_MAX_TOKENS, DEFAULT_PROMPT
from specmon.reports.snapshot_table import comparison_rows, export, lifetime_for
from specmon.session.baselines import NOT_CHECKED, BaselineLookup, LifetimeOf, find_baseline
from specmon.session.server_session import ServerSession
from specmon.storage.store import Store, StoreError
from specmon.target import Target

SPEC_URL = "http://spec:30000"
NOW = T0 + 1200
ONE = replace(PROTOCOL, max_tokens=DEFAULT_MAX_TOKENS, prompt=DEFAULT_PROMPT, runs=5)
SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")
GONE = LifetimeCheck(LifetimeState.UNVERIFIED, "the baseline server cannot be read: refused")
RESTARTED = LifetimeCheck(LifetimeState.RESTARTED, "the baseline server restarted since")


class _Feed:
    async def run(self, sink: object) -> None: ...

    def follow_baseline_server(self, url: str | None) -> None: ...

    def start_bench(self, *args: object) -> None: ...

    def cancel_bench(self) -> bool:
        return True

    def pause_probe(self, paused: bool) -> None: ...


def _dashboard(
    store: Store, lifetimes: Mapping[str, LifetimeCheck], baseline_url: str | None
) -> ServerSession:
    """The dashboard's (and each fleet server's, the exporter's, `--once`'s) session, knowing
    what `check` reads of each baseline server."""
    config = MonitorConfig(url=SPEC_URL, baseline_url=baseline_url)
    target = FleetTarget(SPEC_URL, baseline_url)
    session = ServerSession(target, config, _Feed(), store, wall=lambda: NOW)
    session.live.baseline.known_lifetime = lambda s, _info: lifetimes.get(s.url, NOT_CHECKED)  # type: ignore[method-assign]
    return session


def _reader(lifetimes: Mapping[str, LifetimeCheck]):  # type: ignore[no-untyped-def]
    """What `check` and `whatif` read of the candidates' servers."""

    async def read(_candidates: Iterable[Snapshot], _server: Target) -> LifetimeOf:
        return lambda s: lifetimes.get(s.url, NOT_CHECKED)

    return read


def _whatif(
    store: Store, lifetimes: Mapping[str, LifetimeCheck], pin: Pin | None
) -> BaselineLookup:
    spec = speculative(0).server
    return asyncio.run(
        find_baseline(store, spec, Target(SPEC_URL), pin=pin, now=NOW, read=_reader(lifetimes))
    )


def _check(store: Store, lifetimes: Mapping[str, LifetimeCheck], pin: Pin | None) -> BaselineLookup:
    """`check`'s choice: its session's, at the server's first info (`CheckSession`), which its
    View shows as the dashboard's shows its own; and whatif's, by the same rule."""
    session = CheckSession(
        Target(SPEC_URL), store, pin=pin, max_age_s=1800, wall=lambda: NOW, read=_reader(lifetimes)
    )
    choice = asyncio.run(session.first_info(speculative(0).server))
    assert choice == session.baseline_choice == _whatif(store, lifetimes, pin)
    shown = session.view().baseline
    if choice.baseline is None:
        assert (shown.present, shown.why_none) == (False, choice.why_none())
    else:
        assert (shown.snapshot_id, shown.url) == (choice.baseline.id, choice.baseline.url)
        assert (shown.origin, shown.chosen_by) == ("from the store", choice.described())
        # Its validity is judged on the lifetime the rule ranked it by, not read again.
        lifetime = asyncio.run(session.baseline_lifetime(choice.baseline))
        assert lifetime == lifetimes.get(choice.baseline.url, NOT_CHECKED)
    return choice


URLS = ["http://plain:1", "http://ab:2", "http://gone:3"]
PLAIN = st.builds(
    lambda at, conc, tokens, url, mem: replace(
        baseline(0, at=T0 + at, args={**ARGS, "mem_fraction_static": mem}),
        id=None,
        url=url,
        protocol=replace(ONE, concurrency=conc, max_tokens=tokens),
    ),
    st.floats(0, 1100),
    st.sampled_from([1, 1, 4, 16]),
    st.sampled_from([DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS, 500]),
    st.sampled_from(URLS),
    st.sampled_from([0.8, 0.8, 0.7]),
)
LIFETIMES = st.fixed_dictionaries({url: st.sampled_from([SAME, GONE, RESTARTED]) for url in URLS})


@settings(max_examples=60, deadline=None)
@given(st.lists(PLAIN, max_size=7), LIFETIMES, st.sampled_from([None, *URLS]))
def test_every_live_surface_chooses_the_same_baseline(
    plain: list[Snapshot], lifetimes: dict[str, LifetimeCheck], pinned: str | None
) -> None:
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "db") as store:
        for snapshot in plain:
            store.save(snapshot)
        session = _dashboard(store, lifetimes, pinned)
        info = speculative(0).server
        dashboard = session._store_lookup(store, info, session.live.protocol)
        check = _check(store, lifetimes, Pin(url=pinned) if pinned else None)
    if dashboard.baseline is not None:
        # Where the dashboard has a baseline, check and whatif have the same, by the same rule.
        assert check.baseline == dashboard.baseline
        assert (check.rule, check.pinned) == (dashboard.rule, dashboard.pinned)
    if check.baseline is not None:
        if pinned is not None:
            assert check.baseline.url == pinned
        assert check.baseline.protocol.concurrency == 1  # never an `ab` of several streams
        assert check.baseline.server.args["mem_fraction_static"] == 0.8
        # Valid before newer: a confirmed one whenever a candidate of its size is.
        sized = [
            s
            for s in plain
            if s.protocol.concurrency == 1
            and s.server.args["mem_fraction_static"] == 0.8
            and s.protocol.max_tokens == check.baseline.protocol.max_tokens
            and (pinned is None or s.url == pinned)
        ]
        if any(lifetimes[s.url] == SAME for s in sized):
            assert lifetimes[check.baseline.url] == SAME
    else:
        assert dashboard.baseline is None
        why = check.why_none()
        assert why.startswith(("no baseline applies", "no baseline in the store")) or (
            pinned is not None and why == f"no snapshot of {pinned} (--baseline-url) in the store"
        ), why


STORED = st.builds(
    lambda at, conc, url, spec: replace(
        speculative(0, at=T0 + at) if spec else baseline(0, at=T0 + at),
        id=None,
        url=url,
        protocol=replace(ONE, concurrency=conc),
    ),
    st.floats(0, 3000),
    st.sampled_from([1, 16]),
    st.sampled_from([SPEC_URL, *URLS]),
    st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(STORED, min_size=1, max_size=7), LIFETIMES)
def test_c_compare_and_export_say_the_same_of_each_pair(
    stored: list[Snapshot], lifetimes: dict[str, LifetimeCheck]
) -> None:
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "db") as store:
        for snapshot in stored:
            store.save(snapshot)
        every = store.list()
    checks = {s.id: lifetimes.get(s.url, SAME) for s in every if s.id is not None}
    rows = comparison_rows(every, candidates=every, max_age_s=1800, lifetimes=checks)
    exported = json.loads(export(rows, "json"))["rows"]
    by_id = {s.id: s for s in every}
    for row, record in zip(rows, exported, strict=True):
        # The c screen's table and `snapshots export` are these rows; the export says them.
        assert (record["baseline_id"], record["baseline_valid"], record["no_baseline"]) == (
            row.baseline_id,
            None if row.validity is None else row.validity.valid,
            row.no_baseline,
        )
        if row.baseline_id is None:
            continue
        base, spec = by_id[row.baseline_id], by_id[row.id]
        # `snapshots compare BASE SPEC` of the same pair: the same validity and reasons.
        lifetime = lifetime_for(base, spec, checks)
        compared = snapshot_validity(base, spec, max_age_s=1800, lifetime=lifetime)
        assert compared == row.validity
        assert base.protocol.concurrency == spec.protocol.concurrency
        assert base.created_at <= spec.created_at


def test_after_ab_on_one_server_check_on_another_uses_a_valid_single_stream_baseline(
    tmp_path: Path,
) -> None:
    """The issue's case: `ab` stores plain benches at 1, 4 and 16 streams per round on a server
    it launched and stopped; `check` (and `whatif`, the same lookup) on another server of the
    same model and flags keeps the valid single-stream baselines of the plain server."""
    with Store(tmp_path / "db") as store:
        for i in range(2):
            store.save(replace(baseline(0, at=T0 + 60 * i), id=None, url="http://plain:1",
                               protocol=ONE))  # fmt: skip
        for i, streams in enumerate((1, 4, 16)):
            store.save(replace(baseline(0, at=T0 + 600 + i), id=None, url="http://ab:2",
                               protocol=replace(ONE, concurrency=streams)))  # fmt: skip
        lifetimes = {"http://plain:1": SAME, "http://ab:2": GONE}
        found = _check(store, lifetimes, None)
        dashboard = _dashboard(store, lifetimes, None)
        live = dashboard._store_lookup(store, speculative(0).server, dashboard.live.protocol)
    assert found.baseline is not None and found.baseline.url == "http://plain:1"
    assert found.baseline.protocol.concurrency == 1
    assert found.rule == "latest valid of the configuration and protocol"
    assert found.considered == 5
    assert found.rejected is not None and found.rejected.snapshot.url in (
        "http://plain:1",
        "http://ab:2",
    )
    assert live.baseline == found.baseline


def test_baseline_url_wins_over_a_newer_baseline_whose_server_is_gone(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        store.save(replace(baseline(0, at=T0), id=None, url="http://plain:1", protocol=ONE))
        store.save(replace(baseline(0, at=T0 + 600), id=None, url="http://gone:3", protocol=ONE))
        lifetimes = {"http://plain:1": SAME, "http://gone:3": GONE}
        dashboard = _dashboard(store, lifetimes, "http://plain:1")
        live = dashboard._store_lookup(store, speculative(0).server, dashboard.live.protocol)
        pinned = _check(store, lifetimes, Pin(url="http://plain:1"))
        by_id = _check(store, lifetimes, Pin(1))
        unpinned = _check(store, {}, None)
    assert live.baseline is not None and live.baseline.url == "http://plain:1"
    assert live.rule == "pinned by --baseline-url"
    assert pinned.baseline == live.baseline
    assert by_id.baseline == live.baseline and by_id.rule == "pinned by --baseline ID"
    assert unpinned.baseline is not None and unpinned.baseline.url == "http://gone:3"


def test_the_first_baseline_of_the_readme_applies_on_every_surface(tmp_path: Path) -> None:
    """`specmon bench PLAIN_URL` with its defaults: the dashboard's probe, `check`, `whatif`
    and the demo take the same protocol, so it applies to each."""
    from specmon.cli import parse_args

    bench = parse_args(["bench", "http://plain:1"])
    demo = parse_args(["demo"])
    check = parse_args(["check", SPEC_URL])
    assert bench.max_tokens == DEFAULT_MAX_TOKENS == MonitorConfig(url=SPEC_URL).probe_tokens
    assert demo.probe_tokens == DEFAULT_MAX_TOKENS
    first = replace(baseline(0, at=T0), id=None, url="http://plain:1",
                    protocol=replace(ONE, max_tokens=bench.max_tokens))  # fmt: skip
    with Store(tmp_path / "db") as store:
        store.save(first)
        dashboard = _dashboard(store, {"http://plain:1": SAME}, None)
        live = dashboard._store_lookup(store, speculative(0).server, dashboard.live.protocol)
        found = _check(store, {"http://plain:1": SAME}, None)
    assert check.probe_tokens is None  # it follows the baseline, which is the default anyway
    assert live.baseline is not None and found.baseline == live.baseline


class _LockedFrom(Store):
    """A store whose `baselines()` fails from its `at`-th call on (locked meanwhile)."""

    at = 1

    def baselines(self) -> list[Snapshot]:
        self.at -= 1
        if self.at <= 0:
            raise StoreError("database is locked")
        return super().baselines()


@pytest.mark.parametrize("at", [1, 2])
def test_a_store_that_fails_at_checks_lookup_ends_the_check(at: int, tmp_path: Path) -> None:
    """A watching session logs a store it cannot read and goes on; `check`'s raises it, whether
    it fails while the candidates are found (1) or at the session's own lookup (2), so that the
    command exits as for any unreadable store (`EXIT_STORE`)."""
    with _LockedFrom(tmp_path / "db") as store:
        store.at = at
        session = CheckSession(Target(SPEC_URL), store, max_age_s=1800, read=_reader({}))
        with pytest.raises(StoreError, match="database is locked"):
            asyncio.run(session.first_info(speculative(0).server))
    if at == 2:
        assert session.view().events[-1].text == "store: database is locked"
