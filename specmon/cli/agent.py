"""`specmon agent`: serve this box's GPUs, host and server process as DCGM-style metrics.

Also `--gpu-metrics URL`, the option of every command that shows GPU state.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from typing import Any

from specmon.analysis.gpus import gpu_verdict
from specmon.cli import stopping
from specmon.cli.common import positive_int, refuse_on_command_line, takes
from specmon.sources.dcgm import AGENT_TOKEN_ENV, DCGM_PORT
from specmon.sources.host import HostSource
from specmon.sources.http import load_secret
from specmon.sources.nvml import NvmlSource
from specmon.sources.telemetry import LocalTelemetry
from specmon.target import ApiKey
from specmon.web_hosts import allowed_hosts, allowed_name, is_loopback

DEFAULT_HOST = "127.0.0.1"


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
        "sees the GPUs. The endpoint shows process names and pids: it listens on "
        f"{DEFAULT_HOST} unless --host says otherwise, and bound elsewhere asks every request "
        f"for a token (Authorization: Bearer): from --token-file, else ${AGENT_TOKEN_ENV}, else "
        f"a new one, printed. specmon sends ${AGENT_TOKEN_ENV} to the agents it reads.",
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
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; 0.0.0.0 for "
        "every interface, with a token)",
    )
    agent.add_argument(
        "--token-env",
        metavar="NAME",
        help=f"environment variable holding the token (default {AGENT_TOKEN_ENV})",
    )
    agent.add_argument("--token-file", metavar="PATH", help="file holding the token")
    refuse_on_command_line(
        agent, "--token", f"{AGENT_TOKEN_ENV}=…, --token-env NAME or --token-file PATH"
    )
    agent.add_argument(
        "--allow-host",
        metavar="NAME",
        type=allowed_name,
        action="append",
        default=[],
        help="another name scrapers reach it by (a DNS name, a proxy's); a request naming "
        "any host but these, localhost, 127.0.0.1, [::1], the --host address and, bound to "
        "every interface, this machine's names and addresses is refused (repeatable)",
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

    token = _token(args)
    telemetry = LocalTelemetry(NvmlSource(), HostSource(args.server_port))
    agent = Agent(
        telemetry,
        args.listen_host,
        args.listen_port,
        token=token.value if token else None,
        hosts=allowed_hosts(args.listen_host, args.allow_host),
    )
    try:
        await agent.start()
        first = await telemetry.read()
        print(f"specmon agent: serving {agent.url}", flush=True)
        if token is not None:
            shown = token.value if token.origin == NEW_TOKEN else f"the token in {token.origin}"
            print(f"  every request needs Authorization: Bearer {shown}", flush=True)
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


NEW_TOKEN = "new"  # the origin of a token made here: the only one ever printed


def _token(args: argparse.Namespace) -> ApiKey | None:
    """The token given, else a new one (printed) unless bound to loopback (then None)."""
    found, warnings = load_secret(
        args.token_env,
        args.token_file,
        default_env=AGENT_TOKEN_ENV,
        what="token",
        env_flag="--token-env",
    )
    for warning in warnings:
        print(f"specmon: warning: {warning}", file=sys.stderr)
    if found is not None or is_loopback(args.listen_host):
        return found
    return ApiKey(secrets.token_urlsafe(24), NEW_TOKEN)
