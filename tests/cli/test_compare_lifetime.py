"""`snapshots compare` and `export` read the baseline servers: a restart since the baseline is
named, an unreachable one is unverified, against the simulator."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread

pytestmark = pytest.mark.slow  # benches against the simulator

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3)
PLAIN = replace(FAST, speculative_algorithm=None, enable_metrics=False)


def test_compare_and_export_name_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    bench = ["--runs", "2", "--max-tokens", "40", "--db", db]
    with SimThread(FAST) as spec, SimThread(PLAIN) as plain:
        assert main(["bench", plain.url, *bench]) == 0
        assert main(["bench", spec.url, *bench]) == 0
        capsys.readouterr()
        assert main(["snapshots", "compare", "1", "2", "--db", db]) == 0
        assert "baseline valid ✓" in capsys.readouterr().out
        plain.call(plain.server.restart)  # same flags, metrics off: its args tell
        assert main(["snapshots", "compare", "1", "2", "--db", db]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert any(
            line.startswith("STALE BASELINE: the baseline server restarted since") for line in lines
        )
        assert main(["snapshots", "export", "--format", "json", "--db", db]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
    spec_row = next(row for row in rows if row["speculative"])
    assert spec_row["baseline_valid"] is False
    assert "restarted since" in spec_row["baseline_reasons"][0]
    # The baseline server gone: unverified, so no clean ✓ and exit 1.
    assert main(["snapshots", "compare", "1", "2", "--db", db]) == 1
    assert "UNVERIFIED: the baseline server cannot be read" in capsys.readouterr().out
    assert main(["snapshots", "compare", "1", "2", "--db", db, "--offline"]) == 1
    assert "UNVERIFIED: the baseline server was not checked" in capsys.readouterr().out
