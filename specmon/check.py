"""`specmon check`: triage in seconds, one finding per line, an exit code scripts can use.

Exit codes: 0 healthy; 1 degraded (metrics off, losing speculation, a failing probe …);
2 unreachable or refused (nothing listening, no answer, auth failed, not a server specmon knows).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Literal

import httpx

from specmon.analysis.breakeven import break_even_accept_length, ms_per_token
from specmon.analysis.figures import run_figures
from specmon.analysis.gpus import gpu_verdict
from specmon.analysis.stats import summarize
from specmon.analysis.validity import Validity, baseline_validity
from specmon.errors import AuthFailed, MetricsDisabled, SourceError
from specmon.model import (
    BACKEND_NAMES,
    Protocol,
    RunFigures,
    ServerInfo,
    ServerMetrics,
    Snapshot,
    Telemetry,
)
from specmon.render import cycle_text
from specmon.sources.backend import Backend, connect
from specmon.sources.probe import DEFAULT_PROMPT

EXIT_HEALTHY, EXIT_DEGRADED, EXIT_UNREACHABLE = 0, 1, 2
DEFAULT_CHECK_TOKENS = 200

Level = Literal["ok", "info", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the verdict."""

    level: Level
    text: str


@dataclass(slots=True)
class CheckReport:
    """Everything `check` found, in order."""

    url: str
    findings: list[Finding] = field(default_factory=list)
    exit_code: int = EXIT_HEALTHY
    server: ServerInfo | None = None
    metrics: ServerMetrics | None = None
    probe: RunFigures | None = None
    baseline: Snapshot | None = None
    validity: Validity | None = None
    speedup: float | None = None
    break_even: float | None = None

    def add(self, level: Level, text: str, exit_code: int = EXIT_HEALTHY) -> None:
        """Record a finding and raise the exit code to at least `exit_code`."""
        self.findings.append(Finding(level, text))
        self.exit_code = max(self.exit_code, exit_code)


async def run_check(
    client: httpx.AsyncClient,
    url: str,
    *,
    find_baseline: Callable[[ServerInfo], Snapshot | None] = lambda _info: None,
    probe_tokens: int = DEFAULT_CHECK_TOKENS,
    max_age_s: float = 30 * 60,
    wall: Callable[[], float] = time.time,
    gpu: Callable[[], Awaitable[Telemetry]] | None = None,
) -> CheckReport:
    """Check one server: reachable, auth, version, metrics, speculation, a probe, the baseline.

    With `gpu` (a telemetry source's `read`), one line about the GPUs too; it never changes the
    exit code (no GPU data, throttling or another process on a GPU are information).
    """
    report = CheckReport(url)
    try:
        backend, info = await connect(client)
    except SourceError as exc:  # unreachable, no answer, auth refused, not SGLang, garbage
        report.add("fail", str(exc), EXIT_UNREACHABLE)
        return report
    report.server = info
    report.add("ok", f"reachable: {info.title} serving {info.model or '?'}")
    if client.headers.get("authorization"):
        report.add("ok", "auth: the API key was accepted")
    await _check_metrics(client, backend, report)
    if info.speculative is None:
        report.add("ok", "speculation: off")
    else:
        report.add("ok", f"speculation: {info.speculative.describe()}")
    if gpu is not None:
        await _check_gpus(gpu, report)
    baseline = find_baseline(info) if info.speculative is not None else None
    protocol_tokens = baseline.protocol.max_tokens if baseline else probe_tokens
    prompt = baseline.protocol.prompt if baseline else DEFAULT_PROMPT
    try:
        result = await backend.probe(client, prompt=prompt, max_tokens=protocol_tokens)
    except AuthFailed as exc:
        report.add("fail", f"probe refused: {exc}", EXIT_UNREACHABLE)
        return report
    except SourceError as exc:
        report.add("fail", f"probe failed: {exc}", EXIT_DEGRADED)
        return report
    figures = run_figures(result)
    report.probe = figures
    report.add("ok", "probe: " + _describe_probe(figures))
    if info.speculative is not None:
        _judge_speculation(report, info, figures, baseline, prompt, max_age_s, wall())
    return report


async def _check_metrics(client: httpx.AsyncClient, backend: Backend, report: CheckReport) -> None:
    try:
        report.metrics = await backend.metrics(client)
    except MetricsDisabled as exc:
        report.add("warn", str(exc), EXIT_DEGRADED)
    except SourceError as exc:
        report.add("warn", f"metrics unreadable: {exc}", EXIT_DEGRADED)
    else:
        kind = BACKEND_NAMES.get(backend.name, backend.name)
        report.add("ok", f"metrics: on ({len(report.metrics.families)} {kind} series names)")


async def _check_gpus(read: Callable[[], Awaitable[Telemetry]], report: CheckReport) -> None:
    try:
        telemetry = await read()
    except SourceError as exc:
        report.add("warn", f"GPUs: {exc}")
        return
    verdict = gpu_verdict(telemetry)
    report.add(verdict.level, f"GPUs: {verdict.text}")


def _describe_probe(f: RunFigures) -> str:
    parts = [f"{f.completion_tokens} tokens", f"TTFT {f.ttft_ms:.0f} ms"]
    if f.decode_tok_s is not None:
        parts.append(f"decode {f.decode_tok_s:.1f} tok/s")
    if f.accept_length is not None:
        parts.append(f"accept {f.accept_length:.2f}")
    if f.cycle_ms is not None:
        parts.append(cycle_text(f.cycle_ms, f.cycle_source))
    return ", ".join(parts)


def _judge_speculation(
    report: CheckReport,
    info: ServerInfo,
    figures: RunFigures,
    baseline: Snapshot | None,
    prompt: str,
    max_age_s: float,
    now: float,
) -> None:
    if figures.accept_length is None:
        report.add("warn", "speculation is on but the probe saw no verify steps", EXIT_DEGRADED)
        return
    if baseline is None:
        report.add(
            "info",
            "no baseline for this configuration in the store: run `specmon bench` against the "
            "same server without speculative flags to get speedup and break-even",
        )
        return
    report.baseline = baseline
    probe_snapshot = Snapshot(
        created_at=now,
        url=report.url,
        label=None,
        server=info,
        protocol=Protocol(1, 0, baseline.protocol.max_tokens, 0.0, prompt),
        runs=(figures,),
    )
    report.validity = baseline_validity(baseline, probe_snapshot, now=now, max_age_s=max_age_s)
    base_tok_s = summarize([r.decode_tok_s for r in baseline.runs if r.decode_tok_s]).median
    tag = f"baseline #{baseline.id} ({base_tok_s:.1f} tok/s)"
    if not report.validity.valid:
        report.add("warn", f"{tag} is stale: " + "; ".join(report.validity.reasons), EXIT_DEGRADED)
        return
    if figures.decode_tok_s is not None:
        report.speedup = figures.decode_tok_s / base_tok_s - 1
    if figures.cycle_ms is not None:
        report.break_even = break_even_accept_length(figures.cycle_ms, ms_per_token(base_tok_s))
    if report.speedup is None or report.break_even is None:
        return
    verdict = (
        f"vs {tag}: speedup {report.speedup:+.1%}, accept {figures.accept_length:.2f} "
        f"vs break-even {report.break_even:.2f}"
    )
    if figures.accept_length < report.break_even:
        report.add("warn", verdict + " — speculation is losing", EXIT_DEGRADED)
    else:
        report.add("ok", verdict + " — speculation pays off")


def report_to_dict(report: CheckReport) -> dict[str, object]:
    """The `check --json` object."""
    status = {EXIT_HEALTHY: "healthy", EXIT_DEGRADED: "degraded"}.get(
        report.exit_code, "unreachable"
    )
    server = report.server
    return {
        "schema": 1,
        "url": report.url,
        "status": status,
        "exit_code": report.exit_code,
        "findings": [{"level": f.level, "text": f.text} for f in report.findings],
        "server": None
        if server is None
        else {
            "backend": server.backend,
            "version": server.version,
            "model": server.model,
            "metrics_enabled": report.metrics is not None,
            "speculative": None if server.speculative is None else asdict(server.speculative),
        },
        "probe": None if report.probe is None else asdict(report.probe),
        "baseline": None
        if report.baseline is None
        else {
            "snapshot_id": report.baseline.id,
            "created_at": report.baseline.created_at,
            "valid": report.validity.valid if report.validity else None,
            "reasons": list(report.validity.reasons) if report.validity else [],
        },
        "speedup": report.speedup,
        "break_even_accept_length": report.break_even,
    }
