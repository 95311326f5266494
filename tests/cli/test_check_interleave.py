"""`check --interleave`: the baseline server and the live one probed alternately, the pairs
judged (analysis/paired.py), against the simulator; the design named; the fallbacks said."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from factories import a_run

from specmon.analysis.comparison import Verdict
from specmon.analysis.sequential import SequentialRule
from specmon.analysis.validity import LifetimeCheck, LifetimeState, relaunched_for_speculation
from specmon.check import run_check
from specmon.cli import main
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import Protocol, RunFigures, ServerInfo, Snapshot
from specmon.probe_prompts import DEFAULT_PROMPT
from specmon.reports.check_report import EXIT_DEGRADED, CheckReport, report_to_dict
from specmon.session.baselines import BaselineLookup
from specmon.sim import SimConfig, SimServer, SimThread
from specmon.sources.backends import Connection
from specmon.target import Target

STEP_MS, ACCEPT = 4.0, 2.0


def _spec(speedup: float) -> SimConfig:
    """A speculative simulator `speedup` faster than `_plain()` (1000 · accept / cycle)."""
    return SimConfig(
        plain_step_ms=STEP_MS,
        cycle_ms=ACCEPT * STEP_MS / (1 + speedup),
        accept_length=ACCEPT,
        ttft_ms=5.0,
        seed=11,
    )


def _plain() -> SimConfig:
    return replace(_spec(0.0), speculative_algorithm=None)


def _json_check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["check", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _texts(body: dict[str, object]) -> list[str]:
    return [f["text"] for f in body["findings"]]  # type: ignore[attr-defined,index]


@pytest.mark.slow
def test_interleaved_check_at_a_true_25_percent_says_winning_and_names_its_design(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(_spec(0.25)) as spec, SimThread(_plain()) as plain:
        bench = ["bench", plain.url, "--runs", "3", "--max-tokens", "60", "--db", db]
        assert main(bench) == 0
        capsys.readouterr()
        code, body = _json_check(capsys, spec.url, "--db", db)
        # The same in text: the design line and the verdict line name it.
        assert main(["check", spec.url, "--db", db]) == 0
        lines = capsys.readouterr().out.splitlines()
    assert code == 0, _texts(body)
    assert body["verdict"] == "winning"
    design = body["design"]
    assert isinstance(design, dict)
    assert design["kind"] == "interleaved" and design["url"] == plain.url
    assert design["why_not_interleaved"] is None
    pairs = design["pairs"]
    assert pairs == len(body["probes"]) == len(body["baseline_probes"]) >= 3  # type: ignore[arg-type]
    assert design["text"] == f"interleaved with {plain.url} ({pairs} pairs)"
    low, high = body["speedup_low"], body["speedup_high"]
    assert 0 < low < 0.25 < high  # type: ignore[operator]
    assert body["schema"] == 10
    assert any(line.startswith("· design: interleaved — " + plain.url) for line in lines)
    verdict = next(line for line in lines if "— winning after" in line)
    head = rf"✓ interleaved with {plain.url} \(\d+ pairs\); baseline #1's server "
    assert re.match(head, verdict), verdict
    assert "(98.3% interval)" in verdict and "— winning after" in verdict


@pytest.mark.slow
def test_a_baseline_server_gone_falls_back_to_the_stored_baseline_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(_spec(0.25)) as spec:
        with SimThread(_plain()) as plain:
            bench = ["bench", plain.url, "--runs", "3", "--max-tokens", "40", "--db", db]
            assert main(bench) == 0
        capsys.readouterr()
        code, body = _json_check(capsys, spec.url, "--db", db)
        forced, forced_body = _json_check(capsys, spec.url, "--db", db, "--interleave")
    assert code == forced == EXIT_DEGRADED  # the baseline server's lifetime is unverified
    design = body["design"]
    assert isinstance(design, dict) and design["kind"] == "stored" and design["pairs"] == 0
    why = str(design["why_not_interleaved"])
    assert why.startswith("the baseline server could not be confirmed as the one benched")
    assert f"· design: stored baseline #1, not interleaved: {why}" in [
        f"{'·' if f['level'] == 'info' else '!'} {f['text']}"  # type: ignore[index]
        for f in body["findings"]  # type: ignore[attr-defined]
    ]
    assert body["baseline_probes"] == []
    # Asked for and not possible: the same line, as a warning.
    assert {"level": "warn", "text": f"design: stored baseline #1, not interleaved: {why}"} in (
        forced_body["findings"]  # type: ignore[operator]
    )


class _Drift:
    """A slow change shared by both servers (the client machine getting busier, say): every
    probe of either server finds both `step` slower than the one before.

    The probes' figures are made, not timed: each server's decode speed divided by the drift's
    pace, times a noise of `NOISE` drawn from a seeded generator. What is tested is how each
    design judges a drift, so no wall time enters (on a loaded machine the simulators' timing
    noise alone made the stored baseline's interval reach 0)."""

    NOISE = 0.01

    def __init__(self, step: float, servers: dict[str, tuple[ServerInfo, float]]) -> None:
        self.step, self.servers, self.taken = step, servers, 0
        self.rng = random.Random(5)

    def clock(self) -> float:
        return float(self.taken)  # a second a probe: the budget never ends the probing here

    def runs(self, url: str, count: int) -> tuple[RunFigures, ...]:
        """`count` runs of the server at `url` at the drift's pace now."""
        tok_s = self.servers[url][1] / (1 + self.step * self.taken)
        return tuple(_run(tok_s * (1 + self.rng.gauss(0, self.NOISE))) for _ in range(count))

    async def probe(self, url: str, protocol: Protocol) -> Snapshot:
        self.taken += 1
        info = self.servers[url][0]
        return Snapshot(float(self.taken), url, None, info, protocol, self.runs(url, 1))


def _run(tok_s: float, tokens: int = 60) -> RunFigures:
    """One run decoding `tokens` at `tok_s`, ACCEPT tokens a verify step."""
    seconds = tokens / tok_s
    return a_run(
        completion_tokens=tokens + 1,
        decode_tok_s=tok_s,
        decode_tokens=tokens,
        decode_s=seconds,
        decode_steps=tokens / ACCEPT,
        accept_length=ACCEPT,
        cycle_ms=1000 * seconds / (tokens / ACCEPT),
    )


async def _drifting_check(interleave: bool) -> CheckReport:
    """A check of a server with no true speedup, its baseline benched before a drift of 5% a
    probe began on both servers alike."""
    async with SimServer(_spec(0.0)) as spec, SimServer(_plain()) as plain:
        infos = {}
        for sim in (spec, plain):
            async with httpx.AsyncClient(base_url=sim.url, timeout=10.0) as client:
                infos[sim.url] = await Connection(client).info()
        tok_s = 1000 / STEP_MS  # both servers: no true speedup
        drift = _Drift(0.05, {url: (info, tok_s) for url, info in infos.items()})
        protocol = Protocol(3, 0, 60, 0.0, DEFAULT_PROMPT)
        baseline = Snapshot(
            0.0, plain.url, None, infos[plain.url], protocol, drift.runs(plain.url, 3), id=3
        )

        async def same(_baseline: Snapshot) -> LifetimeCheck:
            return LifetimeCheck(LifetimeState.SAME, "the same server process")

        async with httpx.AsyncClient(base_url=spec.url, timeout=10.0) as client:
            return await run_check(
                Connection(client),
                spec.url,
                run_probe=lambda p: drift.probe(spec.url, p),
                check_lifetime=same,
                find_baseline=lambda _info: BaselineLookup(baseline),
                clock=drift.clock,
                wall=drift.clock,
                # A strict level: what is tested is the drift, not the rule's 5% of false calls.
                rule=SequentialRule(alpha=0.001),
                probe_baseline=drift.probe,
                interleave=interleave,
            )


@pytest.mark.slow
async def test_a_drift_shared_by_both_servers_fools_the_stored_baseline_not_the_pairs() -> None:
    stored = await _drifting_check(interleave=False)
    paired = await _drifting_check(interleave=True)
    assert stored.comparison is not None and paired.comparison is not None
    # The stored design compares probes 5-50% slowed with a baseline taken before: "losing".
    assert stored.comparison.verdict == Verdict.LOSING, stored.findings[-1]
    assert stored.comparison.speedup.value < -0.1
    assert report_to_dict(stored)["design"]["kind"] == "stored"  # type: ignore[index]
    # The pairs see the drift on both sides alike: no speedup, as is true.
    assert paired.comparison.verdict == Verdict.WITHIN_NOISE, paired.findings[-1]
    assert abs(paired.comparison.speedup.value) < 0.05
    assert paired.design is not None and paired.design.interleaved
    assert paired.design.pairs == len(paired.baseline_probes) == len(paired.probes) == 10


async def _relaunched_check(interleave: bool | None) -> CheckReport:
    """A check whose baseline was taken on the checked address before the relaunch."""
    async with SimServer(_spec(0.25)) as spec, SimServer(_plain()) as plain:
        protocol = Protocol(3, 0, 40, 0.0, DEFAULT_PROMPT)
        baseline = await take_snapshot(Target(plain.url), protocol, kind=SnapshotKind.BASELINE)
        probed: list[str] = []

        async def relaunched(_baseline: Snapshot) -> LifetimeCheck:
            return relaunched_for_speculation()

        async def probe_baseline(url: str, protocol: Protocol) -> Snapshot:
            probed.append(url)
            return await take_snapshot(Target(url), protocol, kind=SnapshotKind.RUN)

        async with httpx.AsyncClient(base_url=spec.url, timeout=10.0) as client:
            report = await run_check(
                Connection(client),
                spec.url,
                run_probe=lambda p: take_snapshot(Target(spec.url), p, kind=SnapshotKind.RUN),
                check_lifetime=relaunched,
                find_baseline=lambda _info: BaselineLookup(replace(baseline, id=4)),
                probe_baseline=probe_baseline,
                interleave=interleave,
            )
        assert probed == []  # no second server: never probed
        return report


@pytest.mark.slow
@pytest.mark.parametrize(("interleave", "level"), [(None, "info"), (True, "warn")])
async def test_a_baseline_taken_on_this_address_is_never_interleaved(
    interleave: bool | None, level: str
) -> None:
    report = await _relaunched_check(interleave)
    assert report.design is not None and not report.design.interleaved
    said = [f for f in report.findings if f.text.startswith("design: ")]
    assert [(f.level, f.text) for f in said] == [
        (
            level,
            "design: stored baseline #4, not interleaved: the baseline was taken on this address "
            "before the relaunch with speculation: no second server to probe",
        )
    ]
    assert (report.exit_code == EXIT_DEGRADED) == (interleave is True)
    assert report.findings[-1].text.startswith("vs baseline #4 (")
