"""What `specmon ab` prints: the crossover in words that agree in number, and each round judged
at its own time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specmon.analysis.ab_runs import AbRun, Side
from specmon.analysis.comparison import Verdict
from specmon.analysis.load import Crossover
from specmon.cli import ab, main
from specmon.storage.serialize import snapshot_from_record
from specmon.wording import crossover_line


def test_crossover_says_one_stream_and_several_streams() -> None:
    assert crossover_line(Crossover(1, 4, Verdict.WITHIN_NOISE)) == (
        "Crossover: speculation wins up to 1 stream; above that it stops paying "
        "(4 streams: within noise)."
    )
    assert crossover_line(Crossover(4, None, None)) == (
        "Crossover: speculation wins up to 4 streams, the highest load measured."
    )
    assert crossover_line(Crossover(None, 1, Verdict.LOSING)) == (
        "Crossover: speculation wins at no load measured (1 stream: losing)."
    )


def _real_runs() -> list[AbRun]:
    """The two rounds of a real H200 A/B (SGLang 0.5.17, NGRAM, 1/4/16 streams), as `run_ab`
    returned them: each round's baseline 68-77 s before its speculative bench, all taken more
    than a day before now."""
    fixture = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17" / "ab_two_rounds.json"
    runs = []
    for i, record in enumerate(json.loads(fixture.read_text())):
        snapshot = snapshot_from_record(record)
        side = Side.BASELINE if snapshot.server.speculative is None else Side.SPECULATIVE
        runs.append(AbRun(1 + i // 6, side, snapshot))
    return runs


@pytest.mark.parametrize(("max_age", "valid"), [(None, True), ("60", False)])
def test_ab_judges_each_round_at_its_own_time(
    max_age: str | None,
    valid: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def recorded(*_args: object, **_kwargs: object) -> list[AbRun]:
        return _real_runs()

    monkeypatch.setattr(ab, "run_ab", recorded)
    options = [] if max_age is None else ["--max-age", max_age]
    argv = [
        "ab",
        "--json",
        "--db",
        str(tmp_path / "s.db"),
        *options,
        "--",
        "python",
        "-m",
        "specmon.sim",
        "--port",
        "30007",
    ]
    assert main(argv) == 0
    (config,) = json.loads(capsys.readouterr().out)["configs"]
    assert [lv["valid"] for lv in config["levels"]] == [valid] * 3
    reasons = [reason for lv in config["levels"] for reason in lv["reasons"]]
    assert len(reasons) == (0 if valid else 6)  # two rounds at each of three levels
    pattern = r"too old: taken [67]\d s before the run \(> 60 s\)"
    assert all(re.fullmatch(pattern, reason) for reason in reasons)
