"""Issue 27 item 2: beside the load bands, the stored A/B of this server's configuration. An
A/B of the adaptive simulator (its baseline the same simulator without speculation) at 1 and 12
streams is stored as `ab` stores it; the dashboard watches the adaptive server through 1 → 12
streams; the `w` screen's view finds the A/B and sets each level beside its band: speculation
gains at 1 stream (k = 3 drafted) and nothing at 12 (no drafting from 8 running requests)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pytest
from factories import server_info
from watching import check_json

from specmon.analysis.ab_runs import AbRun, Side
from specmon.analysis.acceptance import PositionAcceptance, pooled_positions
from specmon.analysis.by_load import LoadBand
from specmon.analysis.comparison import Verdict
from specmon.analysis.load import Level, crossover
from specmon.analysis.pooled import Pooled
from specmon.measure.snapshot import SnapshotKind, take_snapshot
from specmon.model import PositionSource, Protocol, SpecConfig
from specmon.session.ab_lookup import lookup_ab
from specmon.sim import SimConfig, SimServer
from specmon.sources.backends import connect
from specmon.storage.store import Store
from specmon.target import Target
from specmon.whatif.by_band import band_what_if
from specmon.whatif.live import live_what_if
from specmon.whatif.text import band_what_if_lines, by_load_lines
from specmon.wording import crossover_line, pct
from tests.session.test_drafting_phases import ADAPTIVE, INTERVALS, TOKENS, Load, Watcher

PROTOCOL = Protocol(runs=3, warmup=1, max_tokens=TOKENS, temperature=0.0, prompt="Explain a CPU.")
CONCURRENCIES = (1, 12)
"""12 streams keep 8-15 requests running: the heavy band, where the server drafts nothing."""
AB_AT = 1_750_000_000.0
"""The A/B's benches' wall clock: a minute apart from here."""
ROUNDS = 2
MAX_AGE_S = 1800.0


async def _ab(config: SimConfig, store: Store) -> list[AbRun]:
    """`ab`'s benches, round by round: the plain simulator, then the adaptive one, at each
    concurrency; saved as `ab` saves them."""
    plain = dataclasses.replace(config, speculative_algorithm=None, adaptive_drafts=None)
    runs: list[AbRun] = []
    clock = iter(AB_AT + 60.0 * n for n in range(1000))
    for round_ in range(1, ROUNDS + 1):
        for side, sim_config in ((Side.BASELINE, plain), (Side.SPECULATIVE, config)):
            kind = SnapshotKind.BASELINE if side == Side.BASELINE else SnapshotKind.RUN
            async with SimServer(sim_config) as sim:
                for concurrency in CONCURRENCIES:
                    protocol = dataclasses.replace(PROTOCOL, concurrency=concurrency)
                    snapshot = await take_snapshot(
                        Target(sim.url), protocol, kind=kind, wall=lambda: next(clock)
                    )
                    runs.append(AbRun(round_, side, snapshot))
    ids = store.save_ab(runs)
    return [
        dataclasses.replace(r, snapshot=dataclasses.replace(r.snapshot, id=i))
        for r, i in zip(runs, ids, strict=True)
    ]


@pytest.mark.slow
async def test_the_w_screen_sets_the_stored_ab_beside_each_band(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        runs = await _ab(ADAPTIVE, store)
        ids = [r.snapshot.id for r in runs]
        async with (
            SimServer(ADAPTIVE) as sim,
            httpx.AsyncClient(base_url=sim.url, timeout=30.0) as client,
        ):
            found, info = await connect(client)
            watcher = Watcher(sim, sim.url, found, info)
            load = Load(client, "sglang")
            await watcher.tick(client)
            try:
                for streams in (1, 12):
                    await load.set_streams(streams)
                    for _ in range(INTERVALS):
                        await load.completions(3 * streams)
                        await watcher.tick(client, streams)
            finally:
                await load.stop()
            ab = lookup_ab(store, info, max_age_s=MAX_AGE_S)
            checked = await check_json(sim.url, TOKENS, find_ab=lambda _info: ab)
    assert ab is not None and ab.ab_id == ids[0]
    speedup = {
        lv.concurrency: lv.comparison.speedup.value for lv in ab.levels if lv.comparison is not None
    }
    # k = 3 drafted at 1 stream (accept length 2.2 per 1.6 ms cycle against 1 token per 1 ms);
    # nothing drafted from 8 running requests: the speculative server decodes as the plain one
    # (how much it gains at 1 stream depends on this machine's event loop at 1 ms steps).
    assert speedup[1] > speedup[12], speedup
    assert ab.crossover == crossover(ab.levels)

    view = live_what_if(watcher.session.live, ab.ended_at + 7200, [], ab)
    assert view.ab is ab
    lines = by_load_lines(view.by_load, view.ab, view.now_wall)
    rows = {line.split()[0]: line for line in lines if line.startswith("  ")}
    said = {lv.concurrency: _said(lv) for lv in ab.levels}
    assert rows["1"].endswith(f"  {said[1]}"), lines  # band 1: the A/B's level at 1 stream
    assert rows["8-15"].endswith(f"  {said[12]}"), lines  # 12 streams keep 8-15 running
    assert said[1].startswith("+")
    assert lines[-2] == f"ab #{ids[0]}, 2.0h ago: {said[1]} at 1 stream, {said[12]} at 12 streams"
    assert lines[-1] == crossover_line(ab.crossover)
    # check names the same A/B, a finding and in JSON, each level with its band.
    assert " — ".join(lines[-2:]).split(" ago: ")[1] in [
        f["text"].split(" ago: ")[-1] for f in checked["findings"]
    ]
    assert checked["ab"]["ab_id"] == ids[0]
    # The A/B ran on another server (another simulator) of this configuration: check names it.
    assert ab.url == runs[0].snapshot.url != sim.url
    assert any(f"ab #{ids[0]} on {ab.url}, " in f["text"] for f in checked["findings"]), checked[
        "findings"
    ]
    assert [(lv["concurrency"], lv["band"]) for lv in checked["ab"]["levels"]] == [
        (1, "1"),
        (12, "8-15"),
    ]
    assert checked["ab"]["crossover"]["pays_up_to"] == ab.crossover.pays_up_to

    # What-if by load: the light band's from its own figures, the A/B's baseline at 1 stream
    # beside it; the heavy band drafts nothing to predict from.
    probes = [run for r in runs if r.side == Side.SPECULATIVE for run in r.snapshot.runs]
    light, heavy = (
        band_what_if(info, band, pooled_positions(probes), ab.levels)
        for band in (view.by_load[0], view.by_load[-1])
    )
    result = light.answer.result
    assert result is not None, light.answer.reason
    assert result.draft_tokens == 3
    assert result.current.decode_tok_s == pytest.approx(light.band.per_request_tok_s)
    assert result.current.comparison is not None
    assert heavy.answer.reason == "no drafting at this load to predict from"


def _said(lv: Level) -> str:
    """ "+67% gains": a level's speedup, whole percent, and its verdict's word."""
    c = lv.comparison
    assert c is not None
    word = {Verdict.WINNING: "gains", Verdict.LOSING: "loses", Verdict.WITHIN_NOISE: "noise"}
    return f"{pct(c.speedup.value, signed=True, places=0)} {word[c.verdict]}"


def test_each_drafting_band_gets_a_what_if_from_its_own_figures() -> None:
    """Issue 27 item 5: per band, the probes' what-if model fitted to the band's own accept
    length and cycle, its baseline the A/B's plain side at streams in the band."""
    k3 = SpecConfig("EAGLE3", 3, 1, 4)
    info = dataclasses.replace(server_info(), speculative=k3)
    positions = PositionAcceptance((0.7, 0.5, 0.3), 1000.0, PositionSource.COUNTERS)
    base = Pooled(6, 40.0, 0.01, None, None)
    level = Level(1, base, Pooled(6, 60.0, 0.01, 2.2, 36.0), None, None, (), None, None)
    light = LoadBand(1, 60.0, 3.0, 1.0, False, 2.5, 60.0, 60.0)
    found = band_what_if(info, light, positions, (level,))
    result = found.answer.result
    assert result is not None, found.answer.reason
    assert result.draft_tokens == 3
    # At the band's own k the model gives back the band's own rate and tokens per step.
    assert result.current.decode_tok_s == pytest.approx(60.0)
    assert result.current.tokens_per_step == pytest.approx(2.5)
    assert result.current.comparison is not None  # against the A/B's baseline at 1 stream
    assert result.current.comparison.speedup.value == pytest.approx(0.5)
    heavy = LoadBand(8, 60.0, None, 0.0, True, None, 900.0, 75.0)
    off = band_what_if(info, heavy, positions, (level,))
    assert off.answer.result is None
    assert off.answer.reason == "no drafting at this load to predict from"
    lines = band_what_if_lines(info, [found, off])
    assert lines[0].startswith("what-if by load")
    assert lines[2] == "      8-15: no drafting at this load to predict from"
    # k = 2 is predicted 1.5% faster than k = 3, well inside its interval: none is named.
    assert result.faster is None
    assert lines[1] == (
        "         1: k = 3 (60.0 tok/s): no other draft length is predicted faster beyond its "
        "interval"
    )


def test_the_screens_valid_baseline_serves_the_band_of_its_streams() -> None:
    """Issue 38: one baseline for the whole `w` screen. Without a stored A/B, the valid
    baseline the probes' what-if uses (`T₀`, benched at one stream) is band 1's too; a heavier
    band says that no baseline was measured at its load, not that none is valid."""
    info = dataclasses.replace(server_info(), speculative=SpecConfig("EAGLE3", 3, 1, 4))
    positions = PositionAcceptance((0.7, 0.5, 0.3), 1000.0, PositionSource.COUNTERS)
    base = Pooled(6, 40.0, 0.01, None, None)
    light = LoadBand(1, 60.0, 3.0, 1.0, False, 2.5, 60.0, 60.0)
    heavy = LoadBand(8, 60.0, 3.0, 1.0, False, 2.0, 400.0, 40.0)
    found = band_what_if(info, light, positions, (), base)
    result = found.answer.result
    assert result is not None, found.answer.reason
    assert result.current.comparison is not None
    assert result.current.comparison.speedup.value == pytest.approx(0.5)
    assert result.cycle.base_ms == pytest.approx(25.0)
    other = band_what_if(info, heavy, positions, (), base)
    assert other.answer.result is None
    assert "no valid baseline" not in other.answer.reason
    said = "no baseline at this load (the baseline's is 1 stream; no stored A/B at 8-15 running)"
    assert said in other.answer.reason
    # No baseline at all: none is valid, and no A/B.
    none = band_what_if(info, light, positions, ())
    assert "no valid baseline and no stored A/B at 1 running" in none.answer.reason
