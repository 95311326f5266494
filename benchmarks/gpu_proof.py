"""Proof on a real GPU box: specmon's NVML readings, nvidia-smi's and `specmon agent`'s agree.

Run where NVIDIA GPUs and nvidia-smi are, with specmon importable (benchmarks/gpu_proof.sh
installs it from wheels when needed and calls this):

    python benchmarks/gpu_proof.py [--out DIR] [--port 9477] [--server-port 30000]
                                   [--load-seconds 45]

Two phases: the GPUs as found ("idle"), then, when PyTorch can use GPU 0, with a matmul loop
running on it ("load"). In each: (a) specmon's local telemetry (NVML + psutil) is read, (b)
nvidia-smi queried, NVML read again, (c) `specmon agent` started on a loopback port and scraped
through specmon's DCGM source, NVML read once more; (d) they are compared. Fields that do not
move (memory total, power limit, max clocks, name, UUID) must match within a small tolerance;
fields that move (utilisation, memory used, power draw, clocks, temperature) must fall within
the NVML readings taken around them, widened by a tolerance. Under load, NVML and the agent must
list the load's process with its memory. With --server-port (or $SERVER_PORT), the server
process must be found, the same by both, and its GPU processes marked as the server's.

Writes one file, $OUT/gpu_proof.json (else --out DIR): the verdict, every check, every reading,
the agent's exposition text (a real capture) and `nvidia-smi -q`. Exit 0: all agree; 1: a
disagreement (each printed as "DISAGREE …"); 2: could not run (no NVML, no nvidia-smi, the agent
did not answer).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from specmon.model import GpuDevice, Telemetry
from specmon.sources.dcgm import DcgmSource
from specmon.sources.host import HostSource
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry

SMI_FIELDS = (
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.limit",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "temperature.gpu",
)
# nvidia-smi field -> (GpuDevice field, moves?, absolute tolerance, relative tolerance)
RULES: dict[str, tuple[str, bool, float, float]] = {
    "utilization.gpu": ("utilization_pct", True, 10.0, 0.0),
    "memory.used": ("memory_used_mib", True, 64.0, 0.0),
    "memory.total": ("memory_total_mib", False, 1.0, 0.0),
    "power.draw": ("power_w", True, 15.0, 0.10),
    "power.limit": ("power_limit_w", False, 1.0, 0.0),
    "clocks.sm": ("sm_clock_mhz", True, 45.0, 0.05),
    "clocks.mem": ("mem_clock_mhz", True, 45.0, 0.05),
    "clocks.max.sm": ("sm_clock_max_mhz", False, 1.0, 0.0),
    "temperature.gpu": ("temperature_c", True, 3.0, 0.0),
}
STATIC = ("name", "uuid", "memory_total_mib", "sm_clock_max_mhz", "mem_clock_max_mhz")
LOAD = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda:0")
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
"""


class Proof:
    """The checks made and what was printed."""

    def __init__(self) -> None:
        self.checks: list[dict[str, Any]] = []
        self.log_lines: list[str] = []

    def log(self, text: str) -> None:
        print(text, flush=True)
        self.log_lines.append(text)

    def check(self, phase: str, gpu: int, what: str, ok: bool, **detail: Any) -> None:
        self.checks.append({"phase": phase, "gpu": gpu, "check": what, "ok": ok, **detail})
        if not ok:
            self.log(f"DISAGREE [{phase}] GPU {gpu} {what}: {json.dumps(detail, default=str)}")

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c["ok"]]


def nvidia_smi() -> list[dict[str, float | None]]:
    """The brief's query, one dict per GPU in index order ("[N/A]" and the like are None)."""
    text = subprocess.run(
        ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    rows = []
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        rows.append({f: _number(c) for f, c in zip(SMI_FIELDS, cells, strict=True)})
    return rows


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def as_json(t: Telemetry) -> dict[str, Any]:
    """A reading as plain data, with the decoded throttle reasons."""
    return dataclasses.asdict(t) | {"throttle_reasons": [g.throttle_reasons for g in t.gpus]}


def compare(
    proof: Proof,
    phase: str,
    gpu: int,
    label: str,
    value: float | None,
    around: list[GpuDevice],
    rule: tuple[str, bool, float, float],
) -> None:
    """`value` (from nvidia-smi or the agent) against the NVML readings taken around it."""
    field, moves, absolute, relative = rule
    known = [v for g in around if (v := getattr(g, field)) is not None]
    if value is None or not known:
        present = value is not None and bool(known)
        proof.check(phase, gpu, f"{label} {field} present", present, value=value, nvml=known)
        return
    low, high = (min(known), max(known)) if moves else (known[0], known[0])
    slack = max(absolute, abs(high) * relative)
    ok = low - slack <= value <= high + slack
    detail = {"value": value, "nvml_range": [low, high], "tolerance": slack}
    proof.check(phase, gpu, f"{label} {field}", ok, **detail)


def scrape_agent(port: int, server_port: int | None, proof: Proof) -> tuple[Telemetry, str]:
    """Start `specmon agent` on loopback, wait for it, scrape it with the DCGM source, stop it."""
    url = f"http://127.0.0.1:{port}/metrics"
    command = [sys.executable, "-m", "specmon", "agent", "--host", "127.0.0.1", "--port", str(port)]
    if server_port is not None:
        command += ["--server-port", str(server_port)]
    agent = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        text = ""
        deadline = time.monotonic() + 60
        while not text and time.monotonic() < deadline and agent.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    text = response.read().decode()
            except OSError:
                time.sleep(0.25)
        if not text:
            raise SystemExit(f"specmon agent did not answer at {url} (exit {agent.poll()})")
        return asyncio.run(_scrape(url)), text
    finally:
        agent.terminate()
        output, _ = agent.communicate(timeout=30)
        proof.log("agent said: " + output.strip().replace("\n", " | "))


async def _scrape(url: str) -> Telemetry:
    source = DcgmSource(url, explicit=True)
    try:
        return await source.read()
    finally:
        await source.aclose()


def phase(
    proof: Proof, name: str, port: int, server_port: int | None, load_pid: int | None
) -> dict[str, Any]:
    """One round: (a) NVML, (b) nvidia-smi, NVML, (c) the agent, NVML; (d) the checks."""
    local = LocalTelemetry(NvmlSource(), HostSource(server_port))
    first = asyncio.run(local.read())
    if first.unavailable is not None:
        raise SystemExit(f"NVML: {first.unavailable}")
    proof.log(f"[{name}] (a) NVML: " + json.dumps(as_json(first), default=str))
    smi = nvidia_smi()
    proof.log(f"[{name}] (b) nvidia-smi: " + json.dumps(smi))
    second = asyncio.run(local.read())
    agent, metrics_text = scrape_agent(port, server_port, proof)
    proof.log(f"[{name}] (c) agent via DCGM source: " + json.dumps(as_json(agent), default=str))
    third = asyncio.run(local.read())
    asyncio.run(local.aclose())

    counts = [len(r.gpus) for r in (first, second, agent, third)] + [len(smi)]
    proof.check(name, -1, "GPU count", len(set(counts)) == 1, counts=counts)
    for i, row in enumerate(smi[: min(counts)]):
        before, after, remote, last = first.gpus[i], second.gpus[i], agent.gpus[i], third.gpus[i]
        proof.check(name, i, "NVML read without error", before.error is None, error=before.error)
        fields = [f.name for f in dataclasses.fields(GpuDevice) if f.name != "error"]
        missing = [f for f in fields if getattr(before, f) is None]
        proof.log(f"[{name}] GPU {i}: NVML fields that were None: {missing or 'none'}")
        for smi_field, rule in RULES.items():
            compare(proof, name, i, "nvidia-smi", row[smi_field], [before, after], rule)
            compare(proof, name, i, "agent", getattr(remote, rule[0]), [after, last], rule)
        for field in STATIC:
            ours, theirs = getattr(before, field), getattr(remote, field)
            proof.check(name, i, f"agent {field} = NVML", ours == theirs, agent=theirs, nvml=ours)
        if load_pid is not None and i == 0:
            for label, device in (("NVML", after), ("agent", remote)):
                listed = [dataclasses.asdict(p) for p in device.processes or ()]
                mine = [p for p in device.processes or () if p.pid == load_pid]
                used = mine[0].used_memory_mib if mine else None
                ok = used is not None and used > 100
                proof.check(name, i, f"{label} lists the load's process", ok, processes=listed)
            proof.log(f"[{name}] GPU 0 throttle reasons under load: {after.throttle_reasons}")
    if server_port is not None:
        check_server(proof, name, second, agent)
    return {
        "nvml": [as_json(first), as_json(second), as_json(third)],
        "nvidia_smi": smi,
        "agent": as_json(agent),
        "agent_metrics": metrics_text,
    }


def check_server(proof: Proof, name: str, local: Telemetry, agent: Telemetry) -> None:
    """The server process, found by port, alike from both; its GPU processes marked as its."""
    ours, theirs = local.server_process, agent.server_process
    missing = local.server_process_missing
    proof.check(name, -1, "server process found", ours is not None, missing=missing)
    if ours is None:
        return
    same = theirs is not None and (theirs.pid, theirs.start_time) == (ours.pid, ours.start_time)
    detail = {"local": ours, "agent": theirs}
    proof.check(name, -1, "agent finds the same server process", same, **detail)
    for label, t in (("NVML", local), ("agent", agent)):
        processes = [p for g in t.gpus for p in g.processes or ()]
        marked = any(p.is_server for p in processes)
        proof.check(name, -1, f"{label} marks the server's GPU processes", marked, seen=processes)


def start_load(seconds: float, proof: Proof) -> subprocess.Popen[str] | None:
    """A matmul loop on GPU 0 for `seconds`, or None when PyTorch cannot run one."""
    command = [sys.executable, "-c", LOAD, str(seconds)]
    try:
        load = subprocess.Popen(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        proof.log(f"no load phase: {exc}")
        return None
    assert load.stdout is not None
    if load.stdout.readline().strip() != "ready":
        _, err = load.communicate(timeout=60)
        proof.log(f"no load phase (PyTorch could not use GPU 0): {err.strip()[-300:]}")
        return None
    time.sleep(3)  # let clocks and NVML's utilisation window catch up with the load
    return load


def main() -> int:
    """Run both phases and write $OUT/gpu_proof.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "gpu-proof-out"))
    parser.add_argument("--port", type=int, default=9477, help="for the agent (default 9477)")
    parser.add_argument(
        "--server-port",
        type=int,
        default=int(os.environ["SERVER_PORT"]) if os.environ.get("SERVER_PORT") else None,
        help="an LLM server's port on this box (default $SERVER_PORT)",
    )
    parser.add_argument("--load-seconds", type=float, default=45.0, help="0: no load phase")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    proof = Proof()
    results: dict[str, Any] = {}
    status = 2
    try:
        results["idle"] = phase(proof, "idle", args.port, args.server_port, None)
        load = start_load(args.load_seconds, proof) if args.load_seconds > 0 else None
        if load is not None:
            try:
                results["load"] = phase(proof, "load", args.port, args.server_port, load.pid)
            finally:
                load.kill()
                load.wait()
        status = 1 if proof.failures else 0
    except (SystemExit, subprocess.SubprocessError, FileNotFoundError) as exc:
        proof.log(f"could not run: {exc}")
    finally:
        verdict = {0: "agree", 1: "DISAGREE", 2: "could not run"}[status]
        proof.log(f"verdict: {verdict} ({len(proof.checks)} checks, {len(proof.failures)} failed)")
        body = {
            "verdict": verdict,
            "failures": proof.failures,
            "checks": proof.checks,
            "readings": results,
            "nvidia_smi_q": _smi_q(),
            "log": proof.log_lines,
        }
        (out / "gpu_proof.json").write_text(json.dumps(body, indent=2, default=str))
    return status


def _smi_q() -> str | None:
    try:
        return subprocess.run(
            ["nvidia-smi", "-q"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":
    sys.exit(main())
