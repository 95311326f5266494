"""Helpers of the real-server tests: the servers' URLs, their own counters, specmon's commands."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specmon.cli import main
from specmon.storage.store import Store

HOW = "start them with `bash ci/realserver/run.sh .venv/bin/pytest -m realserver`"


@dataclass(frozen=True)
class RealServer:
    """One running server: the backend specmon should detect, and where it listens."""

    backend: str
    url: str


def server_url(variable: str) -> str:
    """The URL in `variable`; skips (or, when servers are required, fails) without one."""
    url = os.environ.get(variable, "").strip()
    if url:
        return url
    reason = f"{variable} is unset: no real server to test against; {HOW}"
    if os.environ.get("SPECMON_REALSERVER_REQUIRED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def counters(url: str, prefix: str) -> dict[str, float]:
    """The server's own counters, read with prometheus_client's parser (not specmon's): each
    sample name summed over its series, and `…_per_pos_total` kept per position."""
    text = httpx.get(url + "/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith(prefix):
                continue
            name = sample.name.removeprefix(prefix)
            if "position" in sample.labels:
                name += f"[{sample.labels['position']}]"
            out[name] = out.get(name, 0.0) + sample.value
    return out


def deltas(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """How much each counter grew between two reads."""
    return {name: value - before.get(name, 0.0) for name, value in after.items()}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """Run `specmon ARGV --json`; its exit code and the JSON it printed."""
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert out.out.strip(), out.err
    body: dict[str, Any] = json.loads(out.out)
    return code, body


def bench(
    capsys: pytest.CaptureFixture[str], url: str, db: Path, *, runs: int, tokens: int
) -> dict[str, Any]:
    """`specmon bench` without warm-up (so the runs are the whole window); asserts it saved."""
    code, body = run_json(
        capsys,
        "bench",
        url,
        "--runs",
        str(runs),
        "--warmup",
        "0",
        "--max-tokens",
        str(tokens),
        "--db",
        str(db),
        "--read-timeout",
        "60",
    )
    assert code == 0, body
    return body


CLEAN_BENCH_ATTEMPTS = 3


def counted_bench(
    capsys: pytest.CaptureFixture[str], url: str, db: Path, prefix: str, *, runs: int, tokens: int
) -> tuple[dict[str, Any], dict[str, float]]:
    """`bench` and how much the server's counters (named `prefix`…) grew over it, from a bench
    that ran once: one refused and run again (its stream arrived bunched on a loaded machine)
    left its first attempt's requests in the counters, so the whole measure is taken again."""
    for _ in range(CLEAN_BENCH_ATTEMPTS):
        before = counters(url, prefix)
        code = main(
            [
                "bench",
                url,
                "--runs",
                str(runs),
                "--warmup",
                "0",
                "--max-tokens",
                str(tokens),
                "--db",
                str(db),
                "--read-timeout",
                "60",
                "--json",
            ]
        )
        out = capsys.readouterr()
        assert code == 0 and out.out.strip(), out.err
        if "benching it again" not in out.err:
            body: dict[str, Any] = json.loads(out.out)
            return body, deltas(before, counters(url, prefix))
    pytest.fail(f"no bench of {url} ran once in {CLEAN_BENCH_ATTEMPTS} tries: {out.err}")


def warm_up(capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path) -> None:
    """`specmon check` first: a fresh server's first request also sets up the draft model (it
    took 170 ms on llama.cpp), which would weigh on a window of three runs."""
    db = tmp_path / "warm-up.db"
    Store(db).close()  # check reads a store, and makes none
    code, body = run_json(capsys, "check", url, "--db", str(db))
    assert code == 0, body["findings"]


def free_port() -> int:
    """A free loopback port for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextlib.contextmanager
def serving(
    argv: list[str],
    url: str,
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    limit_s: float = 120,
) -> Iterator[None]:
    """A server of the test's own running until the block ends (ready when /health answers
    200), its output in `log`."""
    with log.open("wb") as out:
        # A session of its own: vLLM's engine runs in a child process, stopped with the group.
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)  # polling a condition (the server up), bounded by the deadline
        else:
            pytest.fail(f"{argv[0]} at {url} did not come up in {limit_s:g} s")
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
