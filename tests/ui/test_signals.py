"""The dashboard in a real terminal (a pty) quits on SIGTERM and when its terminal goes (SIGHUP).

Left behind by a closed tmux server, a dashboard that ignored SIGHUP once spun at 60% of a core.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time

import pytest

from specmon.sim import SimConfig, SimThread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_dashboard_quits_on_signal(signum: int, tmp_path: object) -> None:
    with SimThread(SimConfig(plain_step_ms=2, cycle_ms=4)) as sim:
        leader, follower = pty.openpty()
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specmon",
                "--url",
                sim.url,
                "--no-probe",
                "--db",
                f"{tmp_path}/db",
            ],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env,
            start_new_session=True,
        )
        os.close(follower)
        try:
            deadline = time.monotonic() + 30
            seen = b""
            while b"live" not in seen and time.monotonic() < deadline:  # the dashboard is up
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
            assert b"live" in seen
            proc.send_signal(signum)
            assert proc.wait(timeout=20) is not None
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(leader)
