"""On a real GPU box only: NVML vs nvidia-smi, and the agent's round trip (benchmarks/gpu_proof.py).

Skipped wherever NVML cannot start or nvidia-smi is missing (CI, laptops): the fake NVML covers
the logic there. On the H200: `pytest -m gpu tests/sources/test_gpu_real.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest


def _gpu_here() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    try:
        return bool(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _gpu_here(), reason="needs an NVIDIA GPU with NVML and nvidia-smi"),
    pytest.mark.timeout(300),
]

PROOF = Path(__file__).parent.parent.parent / "benchmarks" / "gpu_proof.py"


def test_nvml_agrees_with_nvidia_smi_and_the_agent_round_trips(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SERVER_PORT"}
    done = subprocess.run(
        [sys.executable, str(PROOF), "--out", str(tmp_path), "--load-seconds", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    body = json.loads((tmp_path / "gpu_proof.json").read_text())
    assert done.returncode == 0, body["failures"] or done.stdout[-2000:]
    assert body["verdict"] == "agree"
    idle = body["readings"]["idle"]
    nvml = idle["nvml"][0]["gpus"]
    assert len(nvml) == len(idle["nvidia_smi"]) == len(idle["agent"]["gpus"]) >= 1
    assert all(g["name"] and g["memory_total_mib"] > 1024 for g in nvml)
    checked = {c["check"] for c in body["checks"]}
    assert "nvidia-smi memory_total_mib" in checked
    assert "agent sm_clock_mhz" in checked
