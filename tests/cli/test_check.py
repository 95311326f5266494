"""`specmon check`: exit 0/1/2 with a one-line reason, against the simulator."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread

FAST = SimConfig(plain_step_ms=4.0, cycle_ms=8.0, accept_length=2.1, ttft_ms=10.0, seed=3)
PLAIN = replace(FAST, speculative_algorithm=None)  # the simulator drops the other spec args


@pytest.fixture
def sim(request: pytest.FixtureRequest) -> Iterator[SimThread]:
    with SimThread(getattr(request, "param", FAST)) as thread:
        yield thread


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_healthy_speculative_server(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--probe-tokens", "60")
    assert code == 0, lines
    assert lines[0].startswith("✓ reachable: SGLang 0.5.23")
    assert "✓ speculation: EAGLE3 steps=2 topk=1 draft=3" in lines
    assert any(line.startswith("✓ probe: 60 tokens") and "accept" in line for line in lines)


@pytest.mark.parametrize("sim", [replace(FAST, enable_metrics=False)], indirect=True)
def test_metrics_off_is_degraded(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--probe-tokens", "20")
    assert code == 1
    assert [line for line in lines if line.startswith("!")] == [
        f"! {sim.url}/metrics: 404 — metrics are off; start the server with --enable-metrics"
    ]


@pytest.mark.parametrize("sim", [replace(FAST, api_key="sk-right")], indirect=True)
def test_missing_and_wrong_api_key(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("SPECMON_API_KEY", raising=False)
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db)
    assert code == 2
    assert lines == [f"✗ {sim.url}/server_info: HTTP 401 — the API key is missing "
                     "(set SPECMON_API_KEY, --api-key-env or --api-key-file)"]  # fmt: skip
    monkeypatch.setenv("WRONG", "sk-wrong")
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--api-key-env", "WRONG")
    assert code == 2
    assert "the API key is wrong" in lines[0]
    assert "sk-wrong" not in "\n".join(lines)
    monkeypatch.setenv("RIGHT", "sk-right")
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--api-key-env",
                            "RIGHT", "--probe-tokens", "20")  # fmt: skip
    assert code == 0
    assert "✓ auth: the API key was accepted" in lines


def test_nothing_listening(empty_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        code, lines, _ = _check(capsys, f"127.0.0.1:{port}", "--db", empty_db)
    assert code == 2
    assert lines == [
        f"✗ http://127.0.0.1:{port}/server_info: connection refused (nothing listening?)"
    ]


def test_server_that_never_answers(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sim.server.faults.hang.add("*")
    code, lines, _ = _check(capsys, sim.url, "--db", empty_db, "--read-timeout", "0.3")
    assert code == 2
    assert lines == [f"✗ {sim.url}/server_info: connected, but no answer within the read timeout"]


def test_json_and_baseline_verdict(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(PLAIN) as plain:
        assert main(["bench", plain.url, "--runs", "3", "--max-tokens", "80", "--db", db]) == 0
        capsys.readouterr()
        code = main(["check", sim.url, "--db", db, "--json", "--probe-tokens", "40"])
        body = json.loads(capsys.readouterr().out)
    assert code == 0, body["findings"]
    assert body["status"] == "healthy"
    assert body["baseline"]["confirmed"] is True
    assert body["probe"]["completion_tokens"] == 80  # the baseline's protocol was reused
    assert any("--probe-tokens 40 set aside" in f["text"] for f in body["findings"])
    # plain 4 ms/token vs a 8 ms cycle: break-even 2.0, accept ~2.1, speedup ~+5%
    assert body["break_even_accept_length"] == pytest.approx(2.0, rel=0.03)
    # One figure, one definition: speedup = now / base − 1 = accept / break-even − 1.
    now, base = body["probe"]["decode_tok_s"], body["baseline"]["decode_tok_s"]
    assert body["speedup"] == pytest.approx(now / base - 1, rel=1e-9)
    accept = body["break_even_accept_length"] + body["margin"]
    assert body["speedup"] == pytest.approx(accept / body["break_even_accept_length"] - 1)


def test_a_restarted_baseline_server_is_never_a_clean_speedup(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    with SimThread(replace(PLAIN, enable_metrics=False)) as plain:
        assert main(["bench", plain.url, "--runs", "2", "--max-tokens", "40", "--db", db]) == 0
        plain.call(plain.server.restart)  # same flags, metrics off: only its args tell
        capsys.readouterr()
        code, lines, _ = _check(capsys, sim.url, "--db", db)
    assert code == 1
    stale = [line for line in lines if "is stale" in line]
    assert len(stale) == 1 and "restarted since" in stale[0], lines
    assert not any(line.startswith("✓ vs baseline") for line in lines)
    # Gone altogether: the lifetime cannot be verified, so no clean ✓ either.
    code, lines, _ = _check(capsys, sim.url, "--db", db)
    assert code == 1
    assert any("cannot be read" in line for line in lines), lines


def test_bad_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _check(capsys, "ftp://x")
    assert code == 2
    assert (
        err.strip()
        == "specmon: error: unsupported scheme 'ftp' in 'ftp://x': use http:// or https://"
    )


@pytest.mark.parametrize(
    "sim", [replace(FAST, extra_args={"num_continuous_decode_steps": 3})], indirect=True
)
def test_advice_names_a_flag_that_does_nothing(
    sim: SimThread, empty_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = empty_db
    code, lines, _ = _check(capsys, sim.url, "--db", db, "--probe-tokens", "60")
    assert code == 0, lines  # advice never changes the exit code
    assert (
        "· advice: --num-continuous-decode-steps 3 does nothing in SGLang 0.5.23 — change "
        "--num-continuous-decode-steps (no effect since 0.3.6: only the scheduler of 0.3.5 "
        "and earlier reads it; later it is a server arg and nothing more)"
    ) in lines
    assert main(["check", sim.url, "--db", db, "--probe-tokens", "60", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [a["flag"] for a in body["advice"]] == ["--num-continuous-decode-steps"]
    assert body["advice"][0]["evidence"].startswith("no effect since 0.3.6")
