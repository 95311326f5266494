"""The rounds' spread on a real A/B: SGLang 0.5.17 NGRAM on an H200, two rounds
(tests/fixtures/sglang-0.5.17/ab_two_rounds.json). Its plain server ran 339 tok/s at four
streams in one launch and 203 in the next: one round's runs cannot show that."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmon.analysis.comparison import Verdict
from specmon.analysis.load import Level, level
from specmon.analysis.validity import DEFAULT_MAX_AGE_S
from specmon.cli.ab_report import table_lines
from specmon.model import Snapshot
from specmon.storage.serialize import snapshot_from_record

FIXTURE = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17" / "ab_two_rounds.json"


def _levels(rounds: int) -> list[Level]:
    snapshots: list[Snapshot] = [snapshot_from_record(r) for r in json.loads(FIXTURE.read_text())]
    by_streams: dict[int, list[Snapshot]] = {}
    for snapshot in snapshots:  # round 1's baseline, speculative; round 2's
        by_streams.setdefault(snapshot.protocol.concurrency, []).append(snapshot)
    return [
        level(
            c,
            [(found[2 * r], found[2 * r + 1]) for r in range(rounds)],
            max_age_s=DEFAULT_MAX_AGE_S,
        )
        for c, found in sorted(by_streams.items())
    ]


def test_one_rounds_interval_misses_the_next_round_and_two_rounds_hold_both() -> None:
    one, two = _levels(1), _levels(2)
    assert [lv.concurrency for lv in two] == [1, 4, 16]
    for first, both in zip(one, two, strict=True):
        assert both.valid and both.spread is not None and both.spread.rounds == 2
        assert both.comparison is not None and first.comparison is not None
        # The speedup is still the ratio of the two pooled figures beside it.
        assert both.comparison.speedup.value == pytest.approx(
            both.speculative.decode_tok_s / both.baseline.decode_tok_s - 1  # type: ignore[operator]
        )
        low, high = both.comparison.speedup.low, both.comparison.speedup.high
        assert low is not None and high is not None
        assert all(low <= g <= high for g in both.spread.speedups)
        # One round called each level a win, tentatively; two rounds this far apart (one
        # degree of freedom between them) cannot exclude zero.
        assert first.comparison.verdict == Verdict.WINNING and first.comparison.tentative
        assert both.comparison.verdict == Verdict.WITHIN_NOISE and both.comparison.tentative
    # At 16 streams round 1 alone said +81.5% [+80.1%, +82.8%]; round 2 measured +104.2%.
    sixteen = one[2].comparison
    assert sixteen is not None and sixteen.speedup.high is not None
    assert two[2].spread is not None and two[2].spread.speedups[1] > sixteen.speedup.high


def test_the_table_shows_each_rounds_speedup_and_says_tentative() -> None:
    lines = table_lines(_levels(2))
    assert "      4 streams: +65.7%, +159.4%" in lines
    assert "within noise (tentative)" in lines[3]
    assert lines[-1] == "(tentative: fewer than 3 rounds; --rounds 3 or more to confirm)"
    one = table_lines(_levels(1))
    assert "(one round: the 95% intervals hold the runs' noise only" in one[-2]


def test_the_table_fits_an_80_column_terminal() -> None:
    """Issue 38: `ab`'s table was ~110 columns and wrapped in an 80-column terminal. At a
    width, the five columns that say who wins at each load always show, the others join while
    they fit, and a line says which were left out; into a pipe (no width) every column shows."""
    for rounds in (1, 2):
        levels = _levels(rounds)
        whole = table_lines(levels)
        assert max(len(line) for line in whole[: len(levels) + 1]) > 100
        for heading in ("accept", "cycle", "break-even", "throughput base → spec", "valid"):
            assert heading in whole[0]
        narrow = table_lines(levels, 80)
        table = narrow[: len(levels) + 1]
        assert max(len(line) for line in table) <= 80, table
        assert table[0].split()[:5] == ["streams", "baseline", "spec", "speedup", "[95%]"]
        assert "verdict" in table[0]
        note = next(line for line in narrow if line.startswith("(80 columns: no "))
        assert len(note) <= 80 and note.endswith("; --json has them)")
        for heading in ("accept", "cycle", "break-even", "throughput", "valid"):
            assert (heading in table[0]) != (heading in note), (heading, table[0], note)
