"""A crafted recording (or one made before `safe_text`): the server info and snapshots it holds
come back from the reader as safe text, so a replay shows the escapes, never sends them."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_text import EVIL, raw_controls

from specmon.model import ServerInfo, Snapshot
from specmon.safe_text import safe_text
from specmon.session.recording import read_recording

RECORDING = Path(__file__).parents[1] / "fixtures" / "recordings" / "sim_session.jsonl"
MODEL = "meta-llama/Llama-3.3-70B-Instruct"


def test_a_crafted_recording_reads_back_safe(tmp_path: Path) -> None:
    text = RECORDING.read_text(encoding="utf-8")
    assert MODEL in text
    crafted = tmp_path / "crafted.jsonl"
    crafted.write_text(text.replace(MODEL, json.dumps(EVIL)[1:-1]), encoding="utf-8")
    recording = read_recording(crafted)
    args = [arg for entry in recording.entries for arg in entry.args]
    snapshots = [arg.server for arg in args if isinstance(arg, Snapshot)]
    readings = [
        reading.value
        for arg in args
        for reading in getattr(arg, "readings", {}).values()
        if isinstance(reading.value, ServerInfo)
    ]
    assert snapshots and readings  # both kinds of server info the recording holds were read
    infos = snapshots + readings
    for info in infos:
        assert info.model == safe_text(EVIL)
        assert not raw_controls(json.dumps(dict(info.args), ensure_ascii=False))
