"""`specmon bench --probe-prompts`: each category benched in turn, a snapshot each, labelled with
it; its protocol names its prompt, so comparisons stay within a category."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmon.analysis.validity import protocol_differences
from specmon.cli import main
from specmon.probe_prompts import BUILTIN_SET
from specmon.sim import SimConfig, SimThread
from specmon.storage.store import Store

CONFIG = SimConfig(
    speculative_num_draft_tokens=4,
    plain_step_ms=1.0,
    cycle_ms=1.0,
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
)


@pytest.mark.slow
def test_each_category_is_a_snapshot_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "s.db")
    with SimThread(CONFIG) as sim:
        code = main(
            [
                "bench",
                sim.url,
                "--probe-prompts",
                "builtin",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--max-tokens",
                "400",
                "--label",
                "night",
                "--json",
                "--db",
                db,
            ]
        )
    out = capsys.readouterr()
    assert code == 0
    document = json.loads(out.out)
    categories = [c["category"] for c in document["categories"]]
    assert categories == [p.category for p in BUILTIN_SET]
    accept = {c["category"]: c["pooled"]["accept_length"] for c in document["categories"]}
    assert accept["repetitive"] > 3.3 and accept["chat"] < 2.2  # the simulator's truths
    assert "By category (pooled runs of each):" in out.err
    with Store(Path(db)) as store:
        saved = {s.label: s for s in store.list()}
    assert set(saved) == {f"night · {c}" for c in categories}
    code_run, chat_run = saved["night · code"], saved["night · chat"]
    assert code_run.protocol.prompt == BUILTIN_SET[0].prompt
    assert protocol_differences(code_run.protocol, chat_run.protocol) == ["prompt"]


def test_prompt_and_probe_prompts_exclude_each_other(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "bench",
            "http://127.0.0.1:9",
            "--probe-prompts",
            "builtin",
            "--prompt",
            "x",
            "--db",
            str(tmp_path / "s.db"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "specmon: error: give either --prompt or --probe-prompts, not both"
    )
