"""`specmon web` without a browser: where it listens, the token, and its one-line errors."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread

TOKEN = "web-token-7f3a9c"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread(SimConfig(plain_step_ms=4.0, cycle_ms=7.0, ttft_ms=5.0)) as server:
        yield server


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """`specmon web ARGS` on a free port: (its address, what it printed up to that)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specmon", "web", "--web-port", "0", "--no-probe", *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert process.stdout is not None
    try:
        said: list[str] = []
        while not (found := re.search(r" on (http://[^/]+)/", said[-1] if said else "")):
            said.append(process.stdout.readline().strip())
            assert said[-1], said  # it exited
        yield found.group(1), "\n".join(said)
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def test_a_token_guards_every_request_and_becomes_a_cookie(sim: SimThread, tmp_path: Path) -> None:
    with serving("--url", sim.url, "--db", str(tmp_path / "db"),
                 env={"SPECMON_WEB_TOKEN": TOKEN}) as (address, line):  # fmt: skip
        assert TOKEN not in line  # a token the user gave is never printed
        assert line.endswith("?token=… (the token in env SPECMON_WEB_TOKEN)")
        with httpx.Client(base_url=address) as client:
            for path in ("/", "/ws", "/static/js/textual.js"):
                refused = client.get(path)
                assert refused.status_code == 401, path
                assert "this dashboard needs its token" in refused.text
            assert client.get("/?token=wrong").status_code == 403
            let_in = client.get(f"/?token={TOKEN}&fontsize=12")
            assert let_in.status_code == 303 and let_in.headers["location"] == "/?fontsize=12"
            assert "HttpOnly" in let_in.headers["set-cookie"]
            page = client.get("/?fontsize=12")  # with the cookie now
            assert page.status_code == 200
            assert f'data-session-websocket-url="ws://{address[7:]}/ws"' in page.text


def test_bound_elsewhere_it_makes_a_token_and_prints_it(sim: SimThread, tmp_path: Path) -> None:
    with serving("--url", sim.url, "--db", str(tmp_path / "db"), "--bind", "0.0.0.0") as (
        address,
        line,
    ):
        token = line.rsplit("?token=", 1)[1]
        assert len(token) >= 24
        with httpx.Client(base_url=address) as client:
            assert client.get("/").status_code == 401
            assert client.get(f"/?token={token}", follow_redirects=True).status_code == 200


def test_on_loopback_no_token_but_no_page_elsewhere_drives_it(
    sim: SimThread, tmp_path: Path
) -> None:
    with serving("--url", sim.url, "--db", str(tmp_path / "db")) as (address, line):
        assert "token" not in line
        with httpx.Client(base_url=address) as client:
            assert client.get("/").status_code == 200
            cross_site = client.get("/ws", headers={"Origin": "http://evil.example"})
            assert cross_site.status_code == 403
            assert "a page at http://evil.example may not open this dashboard" in cross_site.text


def test_a_taken_port_is_one_line(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code = main(["web", "--url", sim.url, "--db", str(tmp_path / "db"),
                     "--web-port", str(port)])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        f"specmon: error: port {port} on 127.0.0.1 is taken by another program: choose another "
        "with --web-port\n"
    )


@pytest.mark.parametrize(
    ("bind", "said"),
    [
        ("10.255.255.1", "--bind 10.255.255.1: not an address of this machine"),
        ("no-such-host.invalid", "--bind no-such-host.invalid: not an address ("),
    ],
)
def test_a_bad_bind_address_is_one_line(
    bind: str, said: str, sim: SimThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["web", "--url", sim.url, "--bind", bind]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specmon: error: {said}") and err.count("\n") == 1


def test_the_token_is_refused_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["web", "--token", TOKEN])
    assert exited.value.code == 2
    assert (
        "--token is refused: a secret on the command line shows in the process list. Use "
        "SPECMON_WEB_TOKEN=…, --token-env NAME or --token-file PATH" in capsys.readouterr().err
    )


def test_dashboard_options_go_before_or_after_web(sim: SimThread, tmp_path: Path) -> None:
    for args in (["--url", sim.url, "web"], ["web", "--url", sim.url]):
        command = [sys.executable, "-m", "specmon", *args, "--bind", "nope.invalid"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 2 and "--bind nope.invalid: not an address" in done.stderr


def test_a_token_file_is_read_and_others_reading_it_is_warned(
    sim: SimThread, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    with serving("--url", sim.url, "--db", str(tmp_path / "db"),
                 "--token-file", str(token_file)) as (address, line):  # fmt: skip
        assert line.startswith(f"specmon: warning: token file {token_file} is readable by others")
        with httpx.Client(base_url=address) as client:
            assert client.get("/").status_code == 401
            assert client.get(f"/?token={TOKEN}", follow_redirects=True).status_code == 200


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--token-file", "/nonexistent/token"], "cannot read token file /nonexistent/token: "),
        (["--token-env", "SPECMON_TEST_UNSET"], "--token-env SPECMON_TEST_UNSET: that environment "
         "variable is not set"),
    ],
)  # fmt: skip
def test_a_missing_token_is_one_line(
    args: list[str], said: str, sim: SimThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["web", "--url", sim.url, *args]) == 2
    assert capsys.readouterr().err.startswith(f"specmon: error: {said}")
