"""`specmon ab` launching a hostile server (issue 36 §1, `server.CASES`; `launched/` makes the
simulator it launches the hostile one): it ends with its documented exit code, no traceback, at
most one error line, no control character the server sent in anything it prints, every number
of its JSON report finite or null, and no launched process left."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ab_helpers import free_port, sims_left
from hostile.checks import CONTROL, controls, finite
from hostile.server import CASES, FAST, IDS, Case

from specmon.cli import main
from specmon.storage.store import Store

pytestmark = pytest.mark.slow  # two simulator processes launched a case

LAUNCHED = Path(__file__).parent / "launched"
TESTS = Path(__file__).parent.parent
SIM = [
    sys.executable,
    "-m",
    "specmon.sim",
    *("--plain-step-ms", str(FAST.plain_step_ms), "--cycle-ms", str(FAST.cycle_ms)),
    *("--ttft-ms", str(FAST.ttft_ms), "--speculative-algorithm", "EAGLE3"),
]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ab_report(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{LAUNCHED}:{TESTS}")
    monkeypatch.setenv("SPECMON_HOSTILE_CASE", case.name)
    argv = ["ab", "--json", "--db", str(tmp_path / "s.db"), "--logs", str(tmp_path / "logs")]
    argv += ["--rounds", "1", "--runs", "2", "--warmup", "0", "--max-tokens", "12"]
    argv += ["--health-timeout", "5", "--connect-timeout", "1", "--read-timeout", "1"]
    code = main([*argv, "--", *SIM, "--port", str(free_port())])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    for text in (out, err):
        assert not CONTROL & set(text), controls(text)
    errors = [line for line in err.splitlines() if line.startswith("specmon: error")]
    assert code in (0, 1), err
    if code == 0:
        report = json.loads(out)
        finite(report)
        assert len(report["snapshot_ids"]) == 2  # the baseline's bench and the speculative's
        assert not errors, err
        with Store(tmp_path / "s.db") as store:
            versions = {snapshot.server.version for snapshot in store.list()}
        if case.name == "escapes in every server-info string":  # the hostile one was launched
            assert all(v and "\\x1b]0;pwned" in v for v in versions), versions
    else:
        assert len(errors) == 1, err
    if not case.reachable:
        assert code == 1
    assert not sims_left()
