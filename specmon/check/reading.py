"""`check`'s readings beside the probes: the server's /metrics and its GPUs, and how one probe is
described (its finding, and each progress line)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from specmon.analysis.catalogue import figure
from specmon.analysis.gpus import gpu_verdict
from specmon.backend_facts import display_name
from specmon.errors import MetricsDisabled, SourceError
from specmon.model import RunFigures, ServerInfo, Telemetry
from specmon.reports.bench_text import cycle_text
from specmon.reports.check_report import EXIT_DEGRADED, CheckReport
from specmon.sources.backends import Connection
from specmon.wording import partial_sums

DECODE, ACCEPT, TTFT = figure("decode tok/s"), figure("accept length"), figure("TTFT")
"""The catalogued figures a probe's description writes (their digits and units)."""


async def check_metrics(connection: Connection, info: ServerInfo, report: CheckReport) -> None:
    """The first scrape of /metrics (the drafting watch's and the traffic's start), said."""
    try:
        report.metrics = await connection.metrics()
    except MetricsDisabled as exc:
        report.add("warn", str(exc), EXIT_DEGRADED)
    except SourceError as exc:
        report.add("warn", f"metrics unreadable: {exc}", EXIT_DEGRADED)
    else:
        kind = display_name(info.backend)
        series = f"{len(report.metrics.families)} {kind} series names"
        workers = report.metrics.workers
        if not workers:
            report.add("ok", f"metrics: on ({series})")
            return
        up = sum(w.up for w in workers)
        report.add("ok", f"metrics: on, summed over {up} of {len(workers)} workers ({series})")
        partial = partial_sums(workers)
        if partial is not None:
            report.add("warn", f"server figures {partial}", EXIT_DEGRADED)


async def check_gpus(read: Callable[[], Awaitable[Telemetry]], report: CheckReport) -> None:
    """One line about the GPUs (`analysis.gpus`); it never changes the exit code."""
    try:
        telemetry = await read()
    except SourceError as exc:
        report.add("warn", f"GPUs: {exc}")
        return
    verdict = gpu_verdict(telemetry)
    report.add(verdict.level, f"GPUs: {verdict.text}")


def describe_probe(f: RunFigures) -> str:
    """ "200 tokens, TTFT 41 ms, decode 412.5 tok/s, accept 2.10, cycle 8.1 ms": one probe."""
    parts = [f"{f.completion_tokens} tokens", f"TTFT {TTFT.value_text(f.ttft_ms)}"]
    if f.decode_tok_s is not None:
        parts.append(f"decode {DECODE.value_text(f.decode_tok_s)}")
    if f.accept_length is not None:
        parts.append(f"accept {ACCEPT.format(f.accept_length)}")
    if f.cycle_ms is not None:
        parts.append(cycle_text(f.cycle_ms, f.cycle_source))
    return ", ".join(parts)
