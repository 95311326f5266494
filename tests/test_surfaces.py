"""One verdict on every surface (issue 24): random histories of a speculative server and its
baseline go through the dashboard's View, the fleet row, the exporter's text, `check --json`,
`snapshots export --format json` and `ab --json`, and the same pair reads the same everywhere;
each catalogued figure reads the same on every surface that names it, and the text reports
(`bench`, `snapshots compare`, `check`'s findings, `ab`'s table, the what-if's words and its
advisor's evidence) write each they show as the catalogue does (the dashboard's panels:
tests/ui/test_catalogue_panels.py).

Each surface's figures are read from its machine format (the View's and the row's values, the
exposition text, the JSON documents) as (speedup, low, high, validity state, verdict). Where
surfaces differ by design, the rule is written here, in `live_expected`, and in docs/metrics.md
("One pair, every surface"):

- A live surface judges the baseline's age now; a stored pair (export, `ab`) at its run's time.
  The histories' stored run is taken now, so both judge the same age.
- The session that saw its baseline server unreachable and back counts it restarted; `check`
  and the exports read it once and judge by its markers.
- A speedup against a stale baseline is shown (struck through on the dashboard, beside "✗" in
  the fleet table, exports and `ab`); its verdict is given by the stored tables only, beside
  their validity, never by a live surface (the dashboard, the fleet row, `check`, the exporter).
- The exporter serves the speedup only while it holds now: the target up, its latest probe
  successful, the baseline applying; the dashboard and the fleet row keep a down target's last
  figures (marked down), and a failed probe's predecessors.
- A server without speculation has no pair (its baseline is of itself): no speedup, no verdict.
- `check` judges after its looks at 1 − α / looks (`speedup_level`); with one look it is the 95%
  of every other surface, which is what is compared here.

No sleeps and no network: fake clocks, a store on disk, a mock transport for `check`'s server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from factories import sample, server_info, server_metrics
from prometheus_client.parser import text_string_to_metric_families
from runs import run

from specmon.analysis.ab_runs import AbRun, Side, judged
from specmon.analysis.acceptance import from_histogram
from specmon.analysis.by_load import LoadBand
from specmon.analysis.catalogue import CATALOGUE, Measured
from specmon.analysis.catalogue import figure as catalogued
from specmon.analysis.comparison import Speedup, compare, verdict
from specmon.analysis.cycle_model import CyclePoint, fit_cycle
from specmon.analysis.load import best_per_concurrency
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.sequential import SequentialRule
from specmon.analysis.stats import summarize
from specmon.analysis.validity import (
    LifetimeCheck,
    ValidityState,
    lifetime_check,
    lifetime_of,
    relaunched_for_speculation,
)
from specmon.check import CheckSession, run_check
from specmon.cli.ab_report import best_lines, table_lines
from specmon.cli.ab_report import report_to_dict as ab_report_to_dict
from specmon.config import FleetTarget, MonitorConfig
from specmon.exporter.metrics import ExportedTarget, render
from specmon.launch.split import split_command
from specmon.measure.snapshot import default_protocol
from specmon.model import (
    ProbeChunk,
    ProbeResult,
    Protocol,
    RunFigures,
    ServerInfo,
    Snapshot,
)
from specmon.probe_prompts import BUILTIN_SET, ProbePrompt
from specmon.reports.bench_text import category_line, run_line, summary_lines
from specmon.reports.check_report import report_to_dict
from specmon.reports.compare_report import compare_text
from specmon.reports.snapshot_table import comparison_rows, export
from specmon.session.baselines import NOT_CHECKED, LifetimeOf
from specmon.session.fleet_row import fleet_row
from specmon.session.server_session import ServerSession
from specmon.session.watch import ProbeOutcome
from specmon.sources.backends import Connection
from specmon.storage.store import Store
from specmon.target import Target
from specmon.whatif.advice import advise
from specmon.whatif.by_band import BandWhatIf
from specmon.whatif.inputs import WhatIfAnswer
from specmon.whatif.prediction import Prediction, what_if
from specmon.whatif.text import band_what_if_lines
from specmon.whatif.text import row as whatif_row
from specmon.whatif.text import summary as whatif_summary
from specmon.wording import DASH

FIXTURES = Path(__file__).parent / "fixtures" / "sglang-0.5.17"
NOW = 1_796_023_200.0
HERE = "http://10.1.230.174:8000"
THERE = "http://10.1.230.174:8001"
MAX_AGE_S = 1800.0
CONFIG = MonitorConfig(
    url=HERE, interval=1.0, probe_every=10.0, probe_tokens=256, max_age=MAX_AGE_S
)
PROTOCOL = default_protocol(5, 0, CONFIG.probe_tokens)
SPEC = server_info("spec")
PLAIN = server_info("plain")
AT_BENCH = "plain/metrics_after"
LATER = {"same": "plain/metrics_after", "restarted": "plain_metrics_after_restart.txt",
         "down and back": "plain/metrics_after"}  # fmt: skip
"""What the baseline server's /metrics serves after the bench, by what became of it."""

BaselineServer = Literal["relaunched here", "same", "restarted", "down", "down and back"]
TargetFate = Literal["up", "probe failed", "down", "restarted"]


@dataclass(frozen=True, slots=True)
class Figures:
    """One surface's reading of one pair; None where the surface says nothing."""

    value: float | None
    low: float | None
    high: float | None
    state: ValidityState | None
    verdict: str | None


@dataclass(frozen=True, slots=True)
class History:
    """A baseline in the store, what became of its server, the probes since, the target's end;
    an earlier round (an older baseline and a run against it) stored before it, or not. A target
    that restarted was probed before, at another speed: those probes are of another lifetime."""

    base: Snapshot
    server: BaselineServer
    probes: tuple[RunFigures, ...]
    target: TargetFate
    earlier: tuple[Snapshot, Snapshot] | None
    kind: Literal["spec", "plain"] = "spec"
    """What the target runs: speculation, or none (the captures' folder)."""
    before_restart: tuple[RunFigures, ...] = ()

    @property
    def info(self) -> ServerInfo:
        return SPEC if self.kind == "spec" else PLAIN


def history(seed: int) -> History:
    """A random history: baseline runs, its age (some too old), its server's fate, probes at a
    random true speedup (some losing, some within noise), the target's end."""
    rng = random.Random(seed)
    base_tok_s = rng.uniform(150, 400)
    base_runs = tuple(run(base_tok_s * rng.gauss(1, 0.03)) for _ in range(rng.randint(1, 5)))
    server: BaselineServer = rng.choice(
        ["relaunched here", "same", "restarted", "down", "down and back"]
    )
    base = Snapshot(
        NOW - rng.uniform(60, 2 * MAX_AGE_S),
        HERE if server == "relaunched here" else THERE,
        None,
        PLAIN,
        replace(PROTOCOL, runs=len(base_runs)),
        base_runs,
        lifetime=lifetime_of(PLAIN, server_metrics(AT_BENCH)),
    )
    gain = rng.choice([-0.3, -0.02, 0.0, 0.03, 0.25, 0.8])
    spread = rng.choice([0.005, 0.03, 0.1])
    probes = tuple(
        run(base_tok_s * (1 + gain) * rng.gauss(1, spread), rng.uniform(1.5, 3.5))
        for _ in range(rng.randint(1, 5))
    )
    target: TargetFate = rng.choice(["up", "up", "probe failed", "down", "restarted"])
    earlier = None
    if rng.random() < 0.5:  # another launch of both, an hour or two before, at other speeds
        at = base.created_at - rng.uniform(3600, 7200)
        old = tuple(run(base_tok_s * 0.7 * rng.gauss(1, 0.03)) for _ in range(3))
        ran = tuple(run(base_tok_s * rng.gauss(1, 0.03), 2.0) for _ in range(3))
        earlier = (
            replace(base, created_at=at, runs=old),
            Snapshot(at + 300, HERE, None, SPEC, replace(PROTOCOL, runs=3), ran),
        )
    before = tuple(run(base_tok_s * 3, 4.0) for _ in range(3)) if target == "restarted" else ()
    # Each probe waits its own time for its first token (queueing, prefill): TTFT's digits are
    # read on every surface. Drawn apart, so the draws above stay each seed's.
    waits = random.Random(f"ttft {seed}")
    probes = tuple(replace(p, ttft_ms=waits.uniform(15.0, 400.0)) for p in probes)
    return History(base, server, probes, target, earlier, before_restart=before)


def check_lifetime(h: History) -> LifetimeCheck:
    """What `check` finds reading the baseline server afresh (`session.baselines.check_lifetime`
    over the network): relaunched here by design, its counters, or that it cannot be read."""
    if h.server == "relaunched here":
        return relaunched_for_speculation()
    if h.server == "down":
        return lifetime_check(h.base.lifetime, None, unreachable="connection refused")
    return lifetime_check(h.base.lifetime, lifetime_of(PLAIN, server_metrics(LATER[h.server])))


def live_session(h: History, store: Store) -> ServerSession:
    """The fleet's (and the exporter's) session of the target, fed the history: it finds the
    baseline in the store itself, samples the baseline server, takes the probes."""
    target = FleetTarget(HERE, None if h.server == "relaunched here" else THERE)
    session = ServerSession.of_target(target, Target(HERE), CONFIG, store, wall=lambda: NOW)
    first = "metrics_after" if h.target == "restarted" else "metrics"
    session.sample(
        sample(
            100.0, wall=NOW - 60, info=h.info, metrics=server_metrics(f"{h.kind}/{first}"), seq=1
        )
    )
    found = session.live.baseline.snapshot
    assert found is not None and found.id == h.base.id, "the store's baseline was not found"
    if h.server != "relaunched here":
        later = LATER.get(h.server, LATER["same"])
        session.baseline_sample(
            sample(101.0, wall=NOW - 59, info=PLAIN, metrics=server_metrics(later), seq=1)
        )
        if h.server in ("down", "down and back"):
            session.baseline_sample(
                sample(
                    102.0,
                    wall=NOW - 58,
                    info=PLAIN,
                    metrics=server_metrics(later),
                    seq=1,
                    error="connection refused",
                )
            )
        if h.server == "down and back":  # the same process, its counters grown
            session.baseline_sample(
                sample(103.0, wall=NOW - 57, info=PLAIN, metrics=server_metrics(later), seq=2)
            )
    for figures in h.before_restart:
        session.probe_done(ProbeOutcome(NOW - 55, 101.0, figures, _probe_result(NOW - 56, figures)))
    if h.target == "restarted":  # its counters went down: a new lifetime
        session.sample(
            sample(
                104.0,
                wall=NOW - 54,
                info=h.info,
                metrics=server_metrics(f"{h.kind}/metrics"),
                seq=2,
            )
        )
    for i, figures in enumerate(h.probes):
        wall = NOW - 10 * (len(h.probes) - i)
        result = _probe_result(wall, figures)
        session.probe_done(ProbeOutcome(wall, 105.0 + i, figures, result))
    if h.target == "probe failed":
        session.probe_failed(NOW, "probe: timed out after 30 s")
    if h.target == "down":  # no answer since the first sample's
        session.sample(
            sample(
                110.0,
                wall=NOW,
                info=h.info,
                metrics=server_metrics(f"{h.kind}/metrics"),
                seq=1,
                error="connection refused",
            )
        )
    else:
        session.sample(
            sample(
                110.0,
                wall=NOW,
                info=h.info,
                metrics=server_metrics(f"{h.kind}/metrics_after"),
                seq=3,
            )
        )
    return session


def _probe_result(sent_at: float, figures: RunFigures) -> ProbeResult:
    """A probe's stream as two chunks, its first token and its last (its steps are not timed:
    the cycle percentiles are not what this test compares)."""
    first = figures.ttft_ms / 1000
    chunks = (
        ProbeChunk(first, 1),
        ProbeChunk(first + (figures.decode_s or 0.0), figures.completion_tokens),
    )
    return ProbeResult(
        sent_at,
        chunks,
        figures.prompt_tokens,
        figures.verify_ct,
        None,
        "length",
        chunks_are_steps=False,
    )


def dashboard_figures(session: ServerSession) -> Figures:
    view = session.view()
    c, validity = view.baseline.comparison, view.baseline.validity
    gain = c.speedup if c else None
    return Figures(
        gain.value if gain else None,
        gain.low if gain else None,
        gain.high if gain else None,
        validity.state if validity else None,
        view.spec.verdict.value if view.spec.verdict else None,
    )


def fleet_figures(session: ServerSession) -> Figures:
    """The fleet row's speedup, mark and verdict: it carries no interval."""
    row = fleet_row("t", session.view())
    state = {
        "✓": ValidityState.VALID,
        "? unverified": ValidityState.UNVERIFIED,
        "✗ stale": ValidityState.STALE,
    }.get(row.baseline)
    return Figures(row.speedup, None, None, state, row.verdict.value if row.verdict else None)


def exporter_figures(session: ServerSession) -> Figures:
    text = render([ExportedTarget(session)]).decode()
    samples = {
        (s.name, s.labels.get("state")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("target") == HERE
    }
    value = samples.get(("specmon_speedup_ratio", None))
    low = samples.get(("specmon_speedup_ratio_low", None))
    high = samples.get(("specmon_speedup_ratio_high", None))
    states = [
        ValidityState(state)
        for (name, state), v in samples.items()
        if name == "specmon_baseline_state" and state is not None and v == 1.0
    ]
    assert len(states) <= 1
    # No verdict series: Prometheus (and the alert rules) read it off the interval.
    said = verdict(Speedup(value, low, high)).value if value is not None else None
    return Figures(value, low, high, states[0] if states else None, said)


def _server_transport(kind: str) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        name = {
            "/server_info": f"{kind}/server_info",
            "/get_server_info": f"{kind}/server_info",
            "/metrics": f"{kind}/metrics_after",
        }.get(request.url.path)
        if name is None:
            return httpx.Response(404, json={"detail": "Not Found"})
        return httpx.Response(200, content=(FIXTURES / name).read_bytes())

    return httpx.MockTransport(handler)


def check_figures(
    h: History, store: Store, prompts: Sequence[ProbePrompt] = ()
) -> tuple[Figures, dict[str, Any]]:
    """`check --json` against the store's baseline (chosen by its session, `CheckSession`, which
    reads the baseline's server as `check_lifetime` says and an earlier launch's not at all),
    probing the history's probes on a clock that does not move, with one look after them all
    (at 95%); then, with `prompts`, one probe per category, the history's probes over again."""
    probes = itertools.chain(h.probes, itertools.cycle(h.probes))

    async def run_probe(protocol: Protocol) -> Snapshot:
        return Snapshot(NOW, HERE, None, h.info, protocol, (next(probes),))

    async def read(_candidates: Iterable[Snapshot], _server: Target) -> LifetimeOf:
        return lambda s: check_lifetime(h) if s.id == h.base.id else NOT_CHECKED

    session = CheckSession(Target(HERE), store, max_age_s=MAX_AGE_S, wall=lambda: NOW, read=read)

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=HERE, transport=_server_transport(h.kind)) as client:
            report = await run_check(
                Connection(client),
                HERE,
                run_probe=run_probe,
                check_lifetime=session.baseline_lifetime,
                find_baseline=session.first_info,
                max_age_s=MAX_AGE_S,
                wall=lambda: NOW,
                clock=lambda: 0.0,
                rule=SequentialRule(looks=(len(h.probes),)),
                prompts=prompts,
            )
        return report_to_dict(report)

    body = asyncio.run(go())
    baseline = body["baseline"]
    state = _state(baseline["valid"], baseline["confirmed"]) if baseline else None
    return Figures(
        body["speedup"], body["speedup_low"], body["speedup_high"], state, body["verdict"]
    ), body


def _state(valid: object, confirmed: object) -> ValidityState | None:
    if valid is None:
        return None
    if not valid:
        return ValidityState.STALE
    return ValidityState.VALID if confirmed else ValidityState.UNVERIFIED


def export_figures(h: History, store: Store) -> tuple[Figures, dict[str, Any]]:
    """`snapshots export --format json` of the probes saved as one run, now: paired with the
    store's baseline, judged at the run's time, the baseline server as `check` found it; the
    earlier round's run with its own round's baseline."""
    spec_id = store.save(
        Snapshot(NOW, HERE, None, h.info, replace(PROTOCOL, runs=len(h.probes)), h.probes)
    )
    every = store.list()
    runs = [s for s in every if s.server.speculative is not None or s.id == spec_id]
    assert h.base.id is not None
    rows = comparison_rows(
        runs, candidates=every, max_age_s=MAX_AGE_S, lifetimes={h.base.id: check_lifetime(h)}
    )
    records = {r["id"]: r for r in json.loads(export(rows, "json"))["rows"]}
    record = records.pop(spec_id)
    assert record["baseline_id"] == (h.base.id if h.kind == "spec" else None)
    if h.earlier is not None:
        (earlier,) = records.values()
        assert earlier["baseline_id"] == min(s.id or 0 for s in every)  # its own round's
        assert earlier["baseline_valid"] is True
    return Figures(
        record["speedup_ratio"],
        record["speedup_ratio_low"],
        record["speedup_ratio_high"],
        _state(record["baseline_valid"], record["baseline_confirmed"]),
        record["verdict"],
    ), record


def live_expected(stored: Figures, h: History, surface: str) -> Figures:
    """What a live surface says of a pair the stored tables read as `stored` (module docstring:
    the rules where surfaces differ by design)."""
    if h.server == "down and back" and surface != "check":
        # The session saw its baseline server unreachable, then back: it may have restarted
        # unseen, so it counts as restarted; `check` and the export read it once, by its markers.
        stored = replace(stored, state=ValidityState.STALE)
    applies = stored.state in (ValidityState.VALID, ValidityState.UNVERIFIED)
    said = stored.verdict if applies else None
    if surface == "exporter":
        if h.target in ("probe failed", "down") or not applies:
            up = h.target != "down"
            return Figures(None, None, None, stored.state if up else None, None)
        return replace(stored, verdict=said)
    if surface == "check" and not applies:
        return Figures(None, None, None, stored.state, None)
    if surface == "fleet":
        return replace(stored, low=None, high=None, verdict=said)
    return replace(stored, verdict=said)


def _close(a: Figures, b: Figures) -> bool:
    def same(x: float | None, y: float | None) -> bool:
        if x is None or y is None:
            return x is None and y is None
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)

    return (
        same(a.value, b.value)
        and same(a.low, b.low)
        and same(a.high, b.high)
        and a.state == b.state
        and a.verdict == b.verdict
    )


@pytest.mark.parametrize("seed", range(60))
def test_one_pair_reads_the_same_on_every_surface(seed: int, tmp_path: Path) -> None:
    h = history(seed)
    with Store(tmp_path / "db") as store:
        for snapshot in h.earlier or ():
            store.save(snapshot)
        base_id = store.save(h.base)
        h = replace(h, base=next(s for s in store.list() if s.id == base_id))  # as stored
        session = live_session(h, store)
        check, body = check_figures(h, store)
        stored, _ = export_figures(h, store)
    assert body["speedup_level"] in (None, 0.95)
    read = {
        "dashboard": dashboard_figures(session),
        "fleet row": fleet_figures(session),
        "exporter": exporter_figures(session),
        "check --json": check,
    }
    rule = {"dashboard": "dashboard", "fleet row": "fleet", "exporter": "exporter",
            "check --json": "check"}  # fmt: skip
    wrong = {
        name: (figures, live_expected(stored, h, rule[name]))
        for name, figures in read.items()
        if not _close(figures, live_expected(stored, h, rule[name]))
    }
    assert not wrong, f"{h.server=} {h.target=} export={stored}: {wrong}"


def _gauges(session: ServerSession) -> dict[str, float]:
    text = render([ExportedTarget(session)]).decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("target") == HERE and not s.labels.keys() - {"target"}
    }


def fresh_history(seed: int) -> History:
    """`history(seed)` with the target up and probing, its baseline fresh and its baseline
    server as it was: a pair every surface compares (where they differ by design: above)."""
    h = history(seed)
    server = "relaunched here" if h.server == "relaunched here" else "same"
    fresh = replace(h.base, created_at=NOW - MAX_AGE_S / 2)
    return replace(h, base=fresh, server=server, target="up", earlier=None, before_restart=())


@pytest.mark.parametrize("seed", range(0, 60, 2))
def test_every_catalogued_figure_reads_the_same_on_every_surface(seed: int, tmp_path: Path) -> None:
    """Each figure of the metric catalogue (`analysis.catalogue`), on each surface that names
    it: the dashboard's `View.figures`, the exporter's gauge (in its base unit), `check
    --json`'s key, the export's column. The target up and probing, its baseline fresh and its
    baseline server as it was (where surfaces differ by design: the test above), all of them
    read the same runs and the same comparison."""
    h = fresh_history(seed)
    with Store(tmp_path / "db") as store:
        base_id = store.save(h.base)
        h = replace(h, base=next(s for s in store.list() if s.id == base_id))
        session = live_session(h, store)
        check, body = check_figures(h, store)
        stored, record = export_figures(h, store)
    assert stored.state == check.state == ValidityState.VALID
    dashboard = {f.key: f.value for f in session.view().figures}
    gauges = _gauges(session)
    for figure in CATALOGUE:
        read = {"dashboard": dashboard[figure.key]}
        if figure.prometheus is not None:
            gauge = gauges.get(figure.prometheus)
            read["exporter"] = None if gauge is None else gauge / figure.prometheus_scale
        if figure.check_key is not None:
            read["check --json"] = body[figure.check_key]
        if figure.export_key is not None:
            read["export"] = record[figure.export_key]
        assert read["dashboard"] is not None or figure.key in ("speedup low", "speedup high")
        assert all(
            (x is None and y is None)
            or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9))
            for x, y in itertools.pairwise(read.values())
        ), (figure.key, read)


NUMBER = r"([+-]?\d+\.\d+)"
"""A figure as the text renderers write one: digits, a point, digits; a sign where it has one."""
DIGITS = r"([+-]?\d+(?:\.\d+)?)"
"""A figure to any digits, whole ones too (TTFT's): what it was written to is then compared."""
SPEEDUP_TEXT = r"([+-]\d+\.\d+%(?: \[[^\]]+\])?)"
"""The speedup and its interval, "+21.0% [+18.2%, +23.9%]"."""
DECODE, CYCLE = (rf"{NUMBER} {re.escape(catalogued(k).unit)}" for k in ("decode tok/s", "cycle"))
PER_TOKEN = rf"{NUMBER} {re.escape(catalogued('ms per token').unit)}"
TTFT = rf"{DIGITS} {re.escape(catalogued('TTFT').unit)}"
RANGE = ("decode low", "decode high")
"""Not figures: the runs' lowest and highest decode tok/s, written beside the pooled one."""


@dataclass(frozen=True, slots=True)
class Written:
    """Figures one text surface wrote: `pattern`'s groups in `text`, each a catalogue key in
    `keys` (a group that matched nothing is left out), of the runs and comparison `of`."""

    surface: str
    of: Measured
    pattern: str
    text: str
    keys: tuple[str, ...]

    def figures(self) -> list[tuple[str, str]]:
        found = re.search(self.pattern, self.text, re.MULTILINE)
        assert found is not None, (self.surface, self.pattern, self.text)
        groups = zip(self.keys, found.groups(), strict=True)
        return [(key, text) for key, text in groups if text is not None]


@pytest.mark.parametrize("seed", range(0, 60, 2))
def test_the_text_renderers_write_every_catalogued_figure_as_the_catalogue(
    seed: int, tmp_path: Path
) -> None:
    """The plain-text surfaces (`bench`'s pooled and per-category lines, `snapshots compare`,
    `check`'s findings) write each catalogued figure they show as the catalogue's `written()`
    of the same runs and comparison: its digits, its sign, its unit beside it. Read from the
    rendered text, against the catalogue over the history's runs pooled afresh; `check`'s
    per-category cells against its JSON's figures of each category."""
    h = fresh_history(seed)
    with Store(tmp_path / "db") as store:
        base_id = store.save(h.base)
        h = replace(h, base=next(s for s in store.list() if s.id == base_id))
        _, body = check_figures(h, store, prompts=BUILTIN_SET[:2])
    assert body["speedup_level"] == 0.95 and body["baseline"]["valid"]
    assert body["probe"]["ttft_ms"] == h.probes[0].ttft_ms  # the probe line's run
    spec = Snapshot(NOW, HERE, None, h.info, replace(PROTOCOL, runs=len(h.probes)), h.probes)
    now, base = pool(spec.runs), pool(h.base.runs)
    run, baseline = Measured(now, compare(now, base)), Measured(base)
    assert run.comparison is not None and now.cycle_ms is not None
    report = compare_text(h.base, spec, max_age_s=MAX_AGE_S, lifetime=check_lifetime(h))
    findings = {f["text"].split(" ", 1)[0]: f["text"] for f in body["findings"]}
    pooled_line = rf"decode {DECODE}(?:, accept {NUMBER})?(?:, cycle {CYCLE})?$"
    header = rf"decode {DECODE} \[{NUMBER}–{NUMBER}\] over \d+ runs? \({PER_TOKEN}\)$"
    pooled_keys = ("decode tok/s", "accept length", "cycle")
    written = [
        Written("bench", run, pooled_line, summary_lines(spec)[0], pooled_keys),
        Written("bench (baseline)", baseline, pooled_line, summary_lines(h.base)[0], pooled_keys),
        Written(
            "bench --probe-prompts",
            run,
            rf"decode {DECODE}, accept {NUMBER} \(snapshot 7\)$",
            category_line("code", spec, 7),
            ("decode tok/s", "accept length"),
        ),
        *(
            Written(
                f"compare ({role})",
                of,
                rf"^{role} .*  {header}",
                report,
                ("decode tok/s", *RANGE, "ms per token"),
            )
            for role, of in (("spec", run), ("base", baseline))
        ),
        Written(
            "compare",
            run,
            rf"^speedup +{SPEEDUP_TEXT}(?: \(95% interval\))?: ",
            report,
            ("speedup",),
        ),
        Written(
            "compare",
            run,
            rf"^accept length +{NUMBER} \(client, pooled\)$",
            report,
            ("accept length",),
        ),
        Written(
            "compare",
            run,
            rf"^cycle +{CYCLE} per draft\+verify \(pooled\)$",
            report,
            ("cycle",),
        ),
        Written(
            "compare",
            run,
            rf"^break-even +accept length {NUMBER}(?:; measured {NUMBER}, margin {NUMBER})?$",
            report,
            ("break-even accept length", "accept length", "margin"),
        ),
        Written(
            "check (baseline)",
            baseline,
            rf"^vs baseline #\d+ \(\S+, {DECODE}\)",
            findings["vs"],
            ("decode tok/s",),
        ),
        Written(
            "check",
            run,
            rf": now {DECODE}, speedup {SPEEDUP_TEXT} \(95\.0% interval\)"
            rf"(?:, accept {NUMBER} vs break-even {NUMBER})? — ",
            findings["vs"],
            ("decode tok/s", "speedup", "accept length", "break-even accept length"),
        ),
        Written(
            "check (probe)",
            Measured(pool(spec.runs[:1])),  # the first probe's line: one run's figures
            rf"^probe: \d+ tokens, TTFT {TTFT}, decode {DECODE}(?:, accept {NUMBER})?"
            rf"(?:, cycle {CYCLE}(?: \(steps from server timings\))?)?$",
            findings["probe:"],
            ("TTFT", "decode tok/s", "accept length", "cycle"),
        ),
        *(
            Written(
                f"check ({name})",
                Measured(
                    Pooled(cell["runs"], cell["decode_tok_s"], None, cell["accept_length"], None)
                ),
                rf"\b{name} accept {NUMBER}, {DECODE}",
                findings["by"],
                ("accept length", "decode tok/s"),
            )
            for name, cell in body["categories"].items()
        ),
    ]
    ranges = {
        id(run): [r.decode_tok_s for r in spec.runs],
        id(baseline): [r.decode_tok_s for r in h.base.runs],
    }
    read: dict[str, set[str]] = {}
    for w in written:
        for key, text in w.figures():
            read.setdefault(w.surface, set()).add(key)
            if key in RANGE:
                value = (min if key == "decode low" else max)(ranges[id(w.of)])
                assert text == catalogued("decode tok/s").format(value), (w.surface, key, text)
            else:
                assert text == catalogued(key).written(w.of), (w.surface, key, text)
    # Every catalogued figure is on a text surface; the speedup's interval is within its text.
    assert set().union(*read.values()) - set(RANGE) == {f.key for f in CATALOGUE} - {
        "speedup low",
        "speedup high",
    }
    gain = run.comparison.speedup
    assert ("[" in (catalogued("speedup").written(run) or "")) is (gain.low is not None)
    # A speculative run's pooled line writes its accept length and cycle; a baseline's neither.
    assert read["bench"] == set(pooled_keys) and read["bench (baseline)"] == {"decode tok/s"}
    assert {name for name in body["categories"]} == {p.category for p in BUILTIN_SET[:2]}


BENCH_ROWS: dict[str, tuple[str, Callable[[RunFigures], float | None]]] = {
    "decode": ("decode tok/s", lambda r: r.decode_tok_s),
    "TTFT": ("TTFT", lambda r: r.ttft_ms),
    "accept": ("accept length", lambda r: r.accept_length),
    "server accept": ("accept length", lambda r: r.server_accept_length),
    "cycle": ("cycle", lambda r: r.cycle_ms),
    "cycle p95": ("cycle", lambda r: r.cycle_ms_p95),
}
"""`bench`'s per-run rows that are values of a catalogued figure, by the row's name: the figure
(the server's accept length and the cycle's p95 to accept length's and cycle's digits) and the
run's value."""


def test_bench_writes_each_runs_figures_to_the_catalogues_digits() -> None:
    """`bench`'s per-run table (each figure's median [min–max] over the runs) and its run lines
    write every value of a catalogued figure to that figure's digits: TTFT in whole ms (0.1 ms
    before it was catalogued), decode tok/s, accept length and cycle as the pooled line does.
    Read back from the text over random histories, the runs' TTFT each their own."""
    read: set[str] = set()
    for seed in range(0, 60, 3):
        h = history(seed)
        for runs in (h.probes, h.base.runs):
            snapshot = Snapshot(NOW, HERE, None, h.info, replace(PROTOCOL, runs=len(runs)), runs)
            rows = "\n".join(summary_lines(snapshot)[2:])
            for name, (key, get) in BENCH_ROWS.items():
                f = catalogued(key)
                values = [v for r in runs if (v := get(r)) is not None]
                found = re.search(
                    rf"^  {re.escape(name)} +{DIGITS} +\S* +\[{DIGITS}–{DIGITS}\]  ",
                    rows,
                    re.MULTILINE,
                )
                if not values:
                    assert found is None, (name, rows)
                    continue
                assert found is not None, (name, rows)
                stats = summarize(values)
                assert found.groups() == tuple(
                    f.format(v) for v in (stats.median, stats.min, stats.max)
                ), (name, rows)
                read.add(name)
            for i, r in enumerate(runs, 1):
                line = run_line(i, len(runs), r)
                found = re.search(
                    rf"\| decode {DECODE}(?: \| accept {NUMBER})?(?: \| cycle {CYCLE})?$", line
                )
                assert found is not None, line
                keys = ("decode tok/s", "accept length", "cycle")
                assert found.groups() == tuple(
                    catalogued(k).format(v) if v is not None else None
                    for k, v in zip(
                        keys, (r.decode_tok_s, r.accept_length, r.cycle_ms), strict=True
                    )
                ), line
    assert read == {"decode", "TTFT", "accept", "cycle"}, read


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_a_server_without_speculation_has_no_speedup_anywhere(seed: int, tmp_path: Path) -> None:
    """Compared with a baseline of its own configuration, a plain server is compared with
    itself: no speedup and no verdict on any surface. Its baseline's state is the dashboard's
    and the exporter's (a baseline taken here, before a relaunch with speculation)."""
    h = history(seed)
    plain_runs = tuple(replace(p, accept_length=None, verify_ct=None) for p in h.probes)
    h = replace(h, kind="plain", earlier=None, probes=plain_runs)
    with Store(tmp_path / "db") as store:
        base_id = store.save(h.base)
        h = replace(h, base=next(s for s in store.list() if s.id == base_id))
        session = live_session(h, store)
        check, _ = check_figures(h, store)
        stored, _ = export_figures(h, store)
    dashboard = dashboard_figures(session)
    exporter = exporter_figures(session)
    nothing = Figures(None, None, None, None, None)
    assert replace(dashboard, state=None) == nothing
    assert fleet_figures(session) == nothing
    assert replace(exporter, state=None) == nothing
    assert exporter.state == (dashboard.state if h.target != "down" else None)
    assert check == stored == nothing


# `ab`: several rounds, each its own relaunched pair per concurrency and configuration; the
# A/B's JSON against the export of the same snapshots.

AB_COMMAND = [sys.executable, "-m", "specmon.sim", "--speculative-algorithm", "NGRAM",
              "--port", "30000"]  # fmt: skip
AB_URL = "http://127.0.0.1:30000"
CONCURRENCIES = (1, 4)


def ab_history(seed: int) -> list[AbRun]:
    """The benches of an A/B as `run_ab` returns them: each round the baseline at every
    concurrency, then each configuration at every concurrency, a bench taking minutes (now and
    then longer than the age limit), the whole A/B up to hours; each launch its own speed."""
    rng = random.Random(seed)
    configs = rng.choice([(None,), ("k=2", "k=4")])
    gains = {config: rng.choice([-0.2, 0.0, 0.1, 0.5]) for config in configs}
    base_tok_s, at, runs = rng.uniform(150, 400), NOW - 4 * 3600, []
    for round_ in range(1, rng.randint(1, 4) + 1):
        sides = [(Side.BASELINE, None), *((Side.SPECULATIVE, c) for c in configs)]
        for side, config in sides:
            launch = base_tok_s * rng.uniform(0.8, 1.2)  # a launch's own speed
            if side == Side.SPECULATIVE:
                launch *= 1 + gains[config]
            for concurrency in CONCURRENCIES:
                at += rng.choice([120.0, 300.0, 600.0, MAX_AGE_S + 300])
                figures = tuple(
                    run(launch * rng.gauss(1, 0.02), 2.5 if side == Side.SPECULATIVE else None)
                    for _ in range(3 * concurrency)
                )
                protocol = replace(PROTOCOL, runs=len(figures), concurrency=concurrency)
                info = SPEC if side == Side.SPECULATIVE else PLAIN
                snapshot = Snapshot(at, AB_URL, None, info, protocol, figures)
                runs.append(AbRun(round_, side, snapshot, config))
    return runs


def _baseline_of(spec: AbRun, runs: list[AbRun]) -> int | None:
    """The id of the baseline of a speculative bench's round, at its concurrency."""
    concurrency = spec.snapshot.protocol.concurrency
    return next(
        r.snapshot.id
        for r in runs
        if r.side == Side.BASELINE
        and r.round == spec.round
        and r.snapshot.protocol.concurrency == concurrency
    )


@pytest.mark.parametrize("seed", range(30))
def test_ab_reads_as_the_export_of_its_snapshots(seed: int, tmp_path: Path) -> None:
    runs = ab_history(seed)
    with Store(tmp_path / "db") as store:
        ids = store.save_ab(runs)  # as `ab` saves them
        every = store.list()
    runs = [replace(r, snapshot=replace(r.snapshot, id=i)) for r, i in zip(runs, ids, strict=True)]
    per_config = judged(runs, max_age_s=MAX_AGE_S)
    sweep = per_config[0][0] is not None
    best = best_per_concurrency([(c or "", found) for c, found, _ in per_config]) if sweep else []
    body = json.loads(
        json.dumps(ab_report_to_dict(split_command(AB_COMMAND, {}), per_config, best, ids))
    )
    spec_ids = [r.snapshot.id for r in runs if r.side == Side.SPECULATIVE]
    rows = {
        r["id"]: r
        for r in json.loads(
            export(
                comparison_rows(
                    [s for s in every if s.id in spec_ids], candidates=every, max_age_s=MAX_AGE_S
                ),
                "json",
            )
        )["rows"]
    }
    for config_json in body["configs"]:
        for level_json in config_json["levels"]:
            mine = [
                r
                for r in runs
                if r.side == Side.SPECULATIVE
                and r.config == config_json["config"]
                and r.snapshot.protocol.concurrency == level_json["concurrency"]
            ]
            exported = [rows[r.snapshot.id] for r in mine]  # in round order
            # Each round's run is exported with its own round's baseline at its concurrency,
            # judged as `ab` judged that round.
            assert [r["baseline_id"] for r in exported] == [_baseline_of(m, runs) for m in mine]
            assert level_json["valid"] == all(r["baseline_valid"] for r in exported)
            assert all(r["baseline_confirmed"] == r["baseline_valid"] for r in exported)
            reasons = sorted({why for r in exported for why in r["baseline_reasons"]})
            assert reasons == level_json["reasons"]
            # The rounds' speedups, the A/B's interval rests on, are the exported rows'.
            assert level_json["round_spread"]["speedups"] == pytest.approx(
                [r["speedup_ratio"] for r in exported], rel=1e-12
            )
            if len(exported) == 1:  # one round: the A/B's pair is the exported row
                (row,) = exported
                gain = level_json["comparison"]["speedup"]
                assert (gain["value"], gain["low"], gain["high"]) == pytest.approx(
                    (row["speedup_ratio"], row["speedup_ratio_low"], row["speedup_ratio_high"]),
                    rel=1e-12,
                )
                assert level_json["comparison"]["verdict"] == row["verdict"]
    # However long the A/B ran, a concurrency whose every round is in time has a best.
    if sweep:
        valid = {lv["concurrency"] for c in body["configs"] for lv in c["levels"] if lv["valid"]}
        assert {b["concurrency"] for b in body["best"]} == valid


@pytest.mark.parametrize("seed", range(0, 30, 2))
def test_ab_writes_every_catalogued_figure_as_the_catalogue(seed: int) -> None:
    """`ab`'s table (each side's decode tok/s, the speedup with its interval, accept length,
    cycle, break-even) and its best configurations write each figure as the catalogue's
    `written()` of the level's runs, pooled over its rounds, and their comparison: read back
    from the printed rows."""
    runs = ab_history(seed)
    per_config = judged(runs, max_age_s=MAX_AGE_S)
    sweep = per_config[0][0] is not None
    written: list[Written] = []
    for _, found, _ in per_config:
        table = "\n".join(table_lines(found))
        for lv in found:
            spec, base = Measured(lv.speculative, lv.comparison), Measured(lv.baseline)
            row = rf"^ *{lv.concurrency}  +"
            written += [
                Written("ab (baseline)", base, rf"{row}{NUMBER}  ", table, ("decode tok/s",)),
                Written(
                    "ab",
                    spec,
                    rf"{row}\S+  +{NUMBER}  +{SPEEDUP_TEXT}  +\S.*?  +{NUMBER}  +{CYCLE}  +"
                    rf"{NUMBER}  +\S+ → \S+  ",
                    table,
                    ("decode tok/s", "speedup", "accept length", "cycle",
                     "break-even accept length"),
                ),
            ]  # fmt: skip
    if sweep:
        best = best_per_concurrency([(c or "", found) for c, found, _ in per_config])
        text = "\n".join(best_lines(best))
        written += [
            Written(
                "ab --sweep (best)",
                Measured(b.level.speculative, b.level.comparison),
                rf"^  +{b.concurrency} streams?: {re.escape(b.config)} \({SPEEDUP_TEXT}, ",
                text,
                ("speedup",),
            )
            for b in best
        ]
    read: set[str] = set()
    for w in written:
        for key, text in w.figures():
            read.add(key)
            assert text == catalogued(key).written(w.of), (w.surface, key, text)
    assert read == {"decode tok/s", "speedup", "accept length", "cycle", "break-even accept length"}


WHATIF_COLUMNS = {"tokens": "accept length", "cycle": "cycle", "decode": "decode tok/s",
                  "break_even": "break-even accept length"}  # fmt: skip
"""The what-if table's columns of catalogued figures (`whatif.text.LABELS`), by their key."""


def _prediction(now: Pooled, p: Prediction) -> Measured:
    """A prediction as the catalogue reads it: its figures are the runs' figures, predicted."""
    return Measured(
        Pooled(now.runs, p.decode_tok_s, None, p.tokens_per_step, p.cycle_ms), p.comparison
    )


def test_the_whatif_writes_every_catalogued_figure_as_the_catalogue() -> None:
    """The what-if's words (`whatif/text.py`: the table's cells, the best k, the bands' lines;
    the advisor's evidence) write a prediction's tokens per step, cycle, decode tok/s, speedup
    and break-even as the catalogue writes the same figures of runs, and the runs' own as the
    catalogue does: over random histories, with a baseline and without, read back from the
    text. The speedup's two columns are its catalogue text, the value then its interval."""
    read: dict[str, set[str]] = {}

    def check(surface: str, of: Measured, pattern: str, text: str, keys: tuple[str, ...]) -> None:
        for key, said in Written(surface, of, pattern, text, keys).figures():
            read.setdefault(surface, set()).add(key)
            assert said == catalogued(key).written(of), (surface, key, said)

    for seed in range(40):
        h, rng = history(seed), random.Random(seed)
        now = pool(h.probes)
        base = pool(h.base.runs) if rng.random() < 0.8 else None
        k = rng.randint(1, 4)
        positions = from_histogram([rng.randint(1, 30) for _ in range(k)] + [rng.randint(0, 200)])
        assert positions is not None and now.cycle_ms is not None
        points = [CyclePoint(k, now.cycle_ms, "now")]
        if rng.random() < 0.7:  # another draft length measured, each draft dearer: a line
            other = rng.choice([n for n in range(1, 6) if n != k])
            cost = 1 + rng.uniform(0.05, 0.3) * (other - k)
            points.append(CyclePoint(other, now.cycle_ms * cost, "snapshot #1"))
        ms = base.ms_per_token if base is not None else None
        cycle = fit_cycle(points, ms, model_drafts=rng.random() < 0.5)
        assert cycle is not None
        w = what_if(now, positions, k, cycle, base)
        assert w is not None
        for p in w.predictions:
            cells, of = whatif_row(h.info, p, w.choice.draft_tokens), _prediction(now, p)
            for column, key in WHATIF_COLUMNS.items():
                if cells[column] != DASH:
                    check("whatif (table)", of, rf"^{NUMBER}$", cells[column], (key,))
                else:
                    assert catalogued(key).written(of) is None, (column, p)
            gain = " ".join(c for c in (cells["speedup"], cells["speedup_interval"]) if c != DASH)
            assert (gain or None) == catalogued("speedup").written(of)
            if p.decode_low is not None and p.decode_high is not None:
                ends = re.fullmatch(rf"{NUMBER}–{NUMBER}", cells["decode_interval"])
                assert ends is not None, cells["decode_interval"]
                assert ends.groups() == tuple(
                    catalogued("decode tok/s").format(v) for v in (p.decode_low, p.decode_high)
                )
        lines = "\n".join(whatif_summary(h.info, w))
        if w.faster is not None:
            check(
                "whatif (best)",
                _prediction(now, w.faster),
                rf"^best: k = \d+ \(.*\), {DECODE} predicted",
                lines,
                ("decode tok/s",),
            )
        band = LoadBand(1, 60.0, float(k), 1.0, False, 2.0, 100.0, 100.0)
        (line,) = band_what_if_lines(h.info, [BandWhatIf(band, WhatIfAnswer(w))])[1:]
        shown = w.faster or w.current
        check(
            "whatif (by load)",
            _prediction(now, shown),
            rf"^ +\S+: k = \d+ (?:predicted |\(){DECODE}",
            line,
            ("decode tok/s",),
        )
        comparison = compare(now, base) if base is not None else None
        found = advise(h.info, protocol=PROTOCOL, now=now, comparison=comparison, whatif=w,
                       earlier=(), flag_for=lambda n: f"--k {n}", off_flag="--off")  # fmt: skip
        for advice in found:
            if advice.evidence.startswith("accept length"):  # under break-even
                assert comparison is not None and base is not None
                check(
                    "advisor (losing)",
                    Measured(now, comparison),
                    rf"^accept length {NUMBER} < break-even {NUMBER} \(cycle / baseline ms per "
                    rf"token; {NUMBER} vs \S+ tok/s, {SPEEDUP_TEXT}\)$",
                    advice.evidence,
                    ("accept length", "break-even accept length", "decode tok/s", "speedup"),
                )
                check(
                    "advisor (losing)",
                    Measured(base),
                    rf"; \S+ vs {DECODE}, ",
                    advice.evidence,
                    ("decode tok/s",),
                )
            elif advice.evidence.startswith("k = "):  # a better draft length
                assert w.faster is not None
                check(
                    "advisor (better k)",
                    _prediction(now, w.faster),
                    rf"^k = \d+: {DECODE} predicted \[",
                    advice.evidence,
                    ("decode tok/s",),
                )
                check(
                    "advisor (better k)",
                    _prediction(now, w.current),
                    rf"\] vs {NUMBER} at k = {w.draft_tokens}$",
                    advice.evidence,
                    ("decode tok/s",),
                )
    # Every line was read somewhere in the histories, each of its figures.
    assert read == {
        "whatif (table)": {"accept length", "cycle", "decode tok/s", "break-even accept length"},
        "whatif (best)": {"decode tok/s"},
        "whatif (by load)": {"decode tok/s"},
        "advisor (losing)": {
            "accept length",
            "break-even accept length",
            "decode tok/s",
            "speedup",
        },
        "advisor (better k)": {"decode tok/s"},
    }, read
