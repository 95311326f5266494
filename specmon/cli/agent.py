"""`specmon agent`: serve this box's GPUs, host and server process as DCGM-style metrics.

Also `--gpu-metrics URL`, the option of every command that shows GPU state.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from specmon.analysis.gpus import gpu_verdict
from specmon.cli import stopping
from specmon.cli.common import positive_int, takes
from specmon.sources.dcgm import DCGM_PORT
from specmon.sources.host import HostSource
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry


def add_gpu_metrics(parser: argparse.ArgumentParser) -> None:
    """The --gpu-metrics option of a command (the top-level one is the dashboard's)."""
    parser.add_argument(
        "--gpu-metrics",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="a DCGM-style metrics endpoint for the server's GPUs (dcgm-exporter or "
        f"`specmon agent`); default: NVML when the server is on this machine, else port "
        f"{DCGM_PORT} of the server's host",
    )
    takes(parser, gpu_metrics=None)


def port_number(text: str) -> int:
    """A TCP port, 1–65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text}")
    return value


def register(commands: Any) -> None:
    """Add the `agent` subcommand."""
    agent = commands.add_parser(
        "agent",
        help="serve this box's GPU, host and server-process metrics (DCGM names) to specmon",
        description="Run on the GPU box: serves NVML and psutil readings at /metrics in "
        "dcgm-exporter's names plus specmon_* ones, so `specmon --host …` on a workstation "
        "sees the GPUs. The endpoint shows process names and pids: bind it where only you "
        "can reach it.",
        allow_abbrev=False,
    )
    # Not `port`/`host`: those are the dashboard's (the LLM server's), given before a command.
    agent.add_argument(
        "--port",
        dest="listen_port",
        type=port_number,
        default=DCGM_PORT,
        help=f"port (default {DCGM_PORT})",
    )
    agent.add_argument(
        "--host",
        dest="listen_host",
        default="0.0.0.0",
        help="address to listen on (default 0.0.0.0)",
    )
    agent.add_argument(
        "--server-port",
        type=port_number,
        metavar="PORT",
        help="the LLM server's port on this box: adds its process (CPU, RSS, start time) and "
        "tells its GPU processes from others",
    )
    agent.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    return stopping.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    # Imported here: aiohttp takes ~150 ms to import, which every other command (the dashboard
    # first: `specmon` imports this module to register `agent`) would pay at start.
    from specmon.agent import Agent

    telemetry = LocalTelemetry(NvmlSource(), HostSource(args.server_port))
    agent = Agent(telemetry, args.listen_host, args.listen_port)
    try:
        await agent.start()
        first = await telemetry.read()
        print(f"specmon agent: serving {agent.url}", flush=True)
        print(f"  GPUs: {first.unavailable or gpu_verdict(first).text}", flush=True)
        if first.server_process is not None:
            proc = first.server_process
            print(f"  server: pid {proc.pid} ({proc.name}) on port {proc.port}", flush=True)
        elif first.server_process_missing is not None:
            print(f"  server: {first.server_process_missing}", file=sys.stderr, flush=True)
        await asyncio.Event().wait()  # until cancelled by Ctrl-C or SIGTERM
    finally:
        await agent.stop()
        await telemetry.aclose()
    return 0
