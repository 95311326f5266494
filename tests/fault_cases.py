"""The fault matrix: each fault the simulator injects and what each surface must say about it
(and a self-signed certificate for the TLS cases).

docs/reliability.md is this table in prose. A case names the cause every surface must report
(a regular expression searched in its one-line message) or None where the surface shrugs the
fault off (bench does not need /metrics; NaN values are unknown figures, not errors).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from specmon.sim import Faults, SimConfig
from specmon.sim.faults import duplicate_series, set_values

# Millisecond steps and short timeouts: a case takes a fraction of a second.
FAST = SimConfig(
    plain_step_ms=1.0,
    cycle_ms=2.0,
    accept_length=2.1,
    ttft_ms=2.0,
    prefill_ms_per_token=0.0,
    seed=7,
)
TIMEOUT_S = 0.5
INFO = ("/server_info", "/get_server_info")
TIMED_OUT = "connected, but no answer within the read timeout"
TOO_LARGE = "larger than 16 MiB; refused"
TRICKLE = "still arriving after 1 s"  # two read timeouts


@dataclass(frozen=True)
class Case:
    """One fault and the cause each surface names (None: the surface is unaffected)."""

    name: str
    apply: Callable[[Faults], None]
    bench: str | None
    """What a failing `bench` says (exit 1, nothing saved); None: it completes and saves."""
    check: tuple[int, str | None]
    """`check`'s exit code and the finding that names the cause."""
    dashboard: str | None
    """What the dashboard's events log says; None: it stays live without an error."""


def _set(**values: object) -> Callable[[Faults], None]:
    def apply(faults: Faults) -> None:
        for name, value in values.items():
            setattr(faults, name, value)

    return apply


def _update(table: str, paths: tuple[str, ...], value: object) -> Callable[[Faults], None]:
    def apply(faults: Faults) -> None:
        getattr(faults, table).update(dict.fromkeys(paths, value))

    return apply


CASES = (
    Case("hang, every path", lambda f: f.hang.add("*"), TIMED_OUT, (2, TIMED_OUT), TIMED_OUT),
    Case(
        "hang, /generate",
        lambda f: f.hang.add("/generate"),
        f"/generate: {TIMED_OUT}",
        (1, f"probe failed: .*{TIMED_OUT}"),
        f"probe: .*{TIMED_OUT}",
    ),
    Case(
        "slow answers, within the timeout", _update("delay_s", ("*",), 0.05), None, (0, None), None
    ),
    Case(
        "slow /generate, past the timeout",
        _update("delay_s", ("/generate",), 2.0),
        TIMED_OUT,
        (1, f"probe failed: .*{TIMED_OUT}"),
        f"probe: .*{TIMED_OUT}",
    ),
    Case(
        "500 on /generate",
        _update("status", ("/generate",), 500),
        "HTTP 500 Internal Server Error",
        (1, "probe failed: .*HTTP 500"),
        "probe: .*HTTP 500",
    ),
    Case(
        "502 everywhere",
        _update("status", ("*",), 502),
        "HTTP 502",
        (2, "HTTP 502"),
        "info: .*HTTP 502",
    ),
    Case(
        "503 on /metrics",
        _update("status", ("/metrics",), 503),
        None,
        (1, "metrics unreadable: .*HTTP 503"),
        "metrics: .*HTTP 503",
    ),
    Case(
        "401 everywhere",
        _update("status", ("*",), 401),
        "HTTP 401 — the API key is missing",
        (2, "HTTP 401 — the API key is missing"),
        "info: .*HTTP 401 — the API key is missing",
    ),
    Case(
        "403 on /generate",
        _update("status", ("/generate",), 403),
        "HTTP 403 — the API key",
        (2, "probe refused: .*HTTP 403"),
        "probe: .*HTTP 403",
    ),
    Case(
        "connection reset mid-stream",
        _set(drop_stream_after=3),
        "the connection dropped mid-stream",
        (1, "probe failed: .*dropped mid-stream"),
        "probe: .*dropped mid-stream",
    ),
    Case(
        "error event mid-stream",
        _set(stream_error_after=3),
        "reported an error mid-stream",
        (1, "probe failed: .*error mid-stream"),
        "probe: .*error mid-stream",
    ),
    Case(
        "stream ends early",
        _set(truncate_stream_after=3),
        "ended before its final chunk",
        (1, "probe failed: .*before its final chunk"),
        "probe: .*before its final chunk",
    ),
    Case(
        "malformed SSE",
        _set(garbage_stream_after=3),
        "stream chunk is not JSON",
        (1, "probe failed: .*not JSON"),
        "probe: .*not JSON",
    ),
    Case(
        "stream with a JSON content type",
        _update("body", ("/generate",), ("application/json", b'{"text": "hi"}')),
        "not an event stream",
        (1, "probe failed: .*not an event stream"),
        "probe: .*not an event stream",
    ),
    Case(
        "endless stream",
        _set(endless_stream=True),
        "the stream ran past the .* tokens asked for",
        (1, "probe failed: .*ran past"),
        "probe: .*ran past",
    ),
    Case(
        "100 MB /metrics",
        _update("huge", ("/metrics",), 100 * 2**20),
        None,
        (1, f"metrics unreadable: .*{TOO_LARGE}"),
        f"metrics: .*{TOO_LARGE}",
    ),
    Case(
        "100 MB server info",
        _update("huge", INFO, 100 * 2**20),
        TOO_LARGE,
        (2, TOO_LARGE),
        f"info: .*{TOO_LARGE}",
    ),
    Case(
        "/metrics trickles in",
        _update("trickle_s", ("/metrics",), 0.2),
        None,
        (1, f"metrics unreadable: .*{TRICKLE}"),
        f"metrics: .*{TRICKLE}",
    ),
    Case(
        "every answer trickles in",
        _update("trickle_s", ("*",), 0.2),
        TRICKLE,
        (2, TRICKLE),
        f"info: .*{TRICKLE}",
    ),
    Case(
        "malformed /metrics",
        _update("body", ("/metrics",), ("text/plain", b"sglang:x{ 1\n")),
        None,
        (1, "metrics unreadable: .*not Prometheus text format"),
        "metrics: .*not Prometheus text format",
    ),
    Case(
        "HTML server info (a proxy's page)",
        _update("body", INFO, ("text/html", b"<html><h1>502 Bad Gateway</h1></html>")),
        "the body is not JSON",
        (2, "the body is not JSON"),
        "info: .*the body is not JSON",
    ),
    Case("NaN metrics", _set(metrics_rewrite=set_values(math.nan)), None, (0, None), None),
    Case("+Inf metrics", _set(metrics_rewrite=set_values(math.inf)), None, (0, None), None),
    Case("duplicate series", _set(metrics_rewrite=duplicate_series), None, (0, None), None),
    Case("server clock jumps a day", _set(clock_jump_s=86400.0), None, (0, None), None),
)
IDS = [case.name for case in CASES]


def self_signed(directory: Path) -> tuple[str, str]:
    """A throw-away certificate for 127.0.0.1 and its key (PEM files), made by `openssl`.

    Returns:
        The certificate's and the key's paths.
    """
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)
