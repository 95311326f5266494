"""`specmon web` without a browser: where it listens, the token, and its one-line errors."""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from specmon.cli import main
from specmon.sim import SimConfig, SimThread
from specmon.ui.web_server import cookie_name
from specmon.web_hosts import reachable_hosts

TOKEN = "web-token-7f3a9c"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread(SimConfig(plain_step_ms=4.0, cycle_ms=7.0, ttft_ms=5.0)) as server:
        yield server


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """`specmon web ARGS` on a free port: (its address, what it printed up to that)."""
    with web_process(*args, env=env) as (_, address, said):
        yield address, said


@contextmanager
def web_process(
    *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`specmon web ARGS` on a free port: (the process, its address, what it printed)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specmon", "web", "--web-port", "0", "--no-probe", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    try:
        said: list[str] = []
        while not (found := re.search(r" on (http://[^/]+)/", said[-1] if said else "")):
            said.append(process.stdout.readline().strip())
            assert said[-1], said  # it exited
        yield process, found.group(1), "\n".join(said)
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


@pytest.mark.slow
def test_a_token_guards_every_request_and_becomes_a_cookie(sim: SimThread, tmp_path: Path) -> None:
    with serving(
        "--url", sim.url, "--db", str(tmp_path / "db"), env={"SPECMON_WEB_TOKEN": TOKEN}
    ) as (address, line):
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
            # Issue 36: the cookie reaches every service on this host (cookies ignore ports):
            # it holds a proof of the token, valid for this process only, not the token.
            cookie = let_in.headers["set-cookie"]
            name = cookie_name(int(address.rsplit(":", 1)[1]))
            assert cookie.startswith(f"{name}=") and TOKEN not in cookie
            for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
                assert attribute in cookie
            raw = httpx.get(f"{address}/", cookies={name: TOKEN})
            assert raw.status_code == 401  # the token itself is no cookie
            page = client.get("/?fontsize=12")  # with the cookie now
            assert page.status_code == 200
            assert f'data-session-websocket-url="ws://{address[7:]}/ws"' in page.text


@pytest.mark.slow
def test_bound_elsewhere_it_makes_a_token_and_prints_it(sim: SimThread, tmp_path: Path) -> None:
    with serving("--url", sim.url, "--db", str(tmp_path / "db"), "--bind", "0.0.0.0") as (
        address,
        line,
    ):
        token = line.rsplit("?token=", 1)[1].split()[0]
        assert len(token) >= 24
        # It printed http://0.0.0.0:…, which no browser elsewhere opens: the machine's own.
        assert "0.0.0.0" not in line
        assert address == f"http://{reachable_hosts('0.0.0.0')[0]}:{address.rsplit(':', 1)[1]}"
        with httpx.Client(base_url=address) as client:
            assert client.get("/").status_code == 401
            page = client.get(f"/?token={token}", follow_redirects=True)
            assert page.status_code == 200
            # Nothing from the internet (an air-gapped cluster): its fonts are the machine's.
            assert "fonts.googleapis.com" not in page.text
            assert "https://" not in page.text


@pytest.mark.slow
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


def _websocket(
    address: str,
    host: str,
    origin: str | None = None,
    cookie: str | None = None,
    size: str = "width=80&height=24",
) -> tuple[socket.socket, str]:
    """A raw websocket handshake at `address` naming `host`: the socket (left open: the tab
    lives while it is) and the status line of the answer."""
    hostname, port = address.removeprefix("http://").rsplit(":", 1)
    connection = socket.create_connection((hostname, int(port)), timeout=30)
    headers = [
        f"GET /ws?{size} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *([f"Origin: {origin}"] if origin else []),
        *([f"Cookie: {cookie}"] if cookie else []),
    ]
    connection.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
    answer = b""
    while b"\r\n" not in answer:
        answer += connection.recv(4096)
    return connection, answer.split(b"\r\n", 1)[0].decode()


def _tabs(process: subprocess.Popen[str]) -> list[psutil.Process]:
    """The dashboard processes `specmon web` runs, one per open websocket."""
    tabs = []
    for child in psutil.Process(process.pid).children(recursive=True):
        try:
            if "specmon.cli.web_tab" in child.cmdline():
                tabs.append(child)
        except psutil.ZombieProcess:  # ended, not yet reaped: it still counts
            tabs.append(child)
        except psutil.NoSuchProcess:  # reaped between the listing and the read
            pass
    return tabs


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _cookie(address: str, token: str) -> str:
    """The cookie `specmon web` at `address` sets for `token` ("name=value")."""
    answer = httpx.get(f"{address}/?token={token}")
    assert answer.status_code == 303
    return answer.headers["set-cookie"].split(";", 1)[0]


@pytest.mark.slow
def test_huge_tabs_closed_abruptly_are_clamped_reaped_and_quiet(
    sim: SimThread, tmp_path: Path
) -> None:
    """Issue 36: `/ws?width=10000&height=10000` drove a tab to 1 GB, and tabs whose browser
    went mid-frame were left running, uncounted, with a traceback each."""
    with web_process("--url", sim.url, "--db", str(tmp_path / "db"), "--max-tabs", "2") as (
        process,
        address,
        _,
    ):
        host = address.removeprefix("http://")
        huge = "width=10000&height=10000"
        for _ in range(3):
            opened = []
            for _ in "ab":  # a closed tab counts until its process is reaped: wait for room
                _until(lambda: httpx.get(f"{address}/").status_code == 200)
                opened.append(_websocket(address, host, size=huge))
            assert all(status.endswith(" 101 Switching Protocols") for _, status in opened)
            _until(lambda: len(_tabs(process)) == 2)
            for tab in _tabs(process):
                environment = tab.environ()
                assert (environment["COLUMNS"], environment["ROWS"]) == ("500", "200")
            for connection, _ in opened:
                connection.recv(1)  # the dashboard is drawing
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                connection.close()  # reset mid-frame
            _until(lambda: _tabs(process) == [])
        process.terminate()
        assert process.stdout is not None
        said = process.stdout.read()
        assert "Traceback" not in said and "Error" not in said, said


@pytest.mark.slow
def test_a_foreign_host_is_refused_and_starts_nothing(sim: SimThread, tmp_path: Path) -> None:
    """DNS rebinding: a page on rebind.example, pointed at 127.0.0.1, sends its own name as
    Host (and as Origin, so the same-origin check alone lets it through)."""
    with web_process(
        "--url", sim.url, "--db", str(tmp_path / "db"), "--allow-host", "Dash.Example"
    ) as (process, address, _):
        port = address.rsplit(":", 1)[1]
        foreign = f"rebind.example:{port}"
        with httpx.Client(base_url=address) as client:
            page = client.get("/", headers={"Host": foreign})
            assert page.status_code == 403
            assert f"This request named {foreign}, which is not one of this machine" in page.text
            assert "--allow-host NAME" in page.text and "dash.example" not in page.text
            assert client.get("/static/js/textual.js", headers={"Host": foreign}).status_code == 403
            for host in (
                f"localhost:{port}",
                f"[::1]:{port}",
                f"dash.example:{port}",
                f"DASH.example:{port}",
                "127.0.0.1",
            ):
                assert client.get("/", headers={"Host": host}).status_code == 200, host
            for host in ("evil@127.0.0.1", "127.0.0.1/x", ""):
                assert client.get("/", headers={"Host": host}).status_code == 403, host
        refused, status = _websocket(address, foreign, origin=f"http://{foreign}")
        with refused:
            assert status == "HTTP/1.1 403 Forbidden"
        assert _tabs(process) == []
        # The same handshake naming this machine starts a tab: the refusal was the Host's.
        allowed, status = _websocket(address, f"127.0.0.1:{port}", origin=address)
        with allowed:
            assert status == "HTTP/1.1 101 Switching Protocols"
            _until(lambda: len(_tabs(process)) == 1)


@pytest.mark.slow
def test_a_tab_beyond_the_limit_gets_the_limit_page(sim: SimThread, tmp_path: Path) -> None:
    with web_process("--url", sim.url, "--db", str(tmp_path / "db"), "--max-tabs", "2") as (
        process,
        address,
        _,
    ):
        host = address.removeprefix("http://")
        first, status = _websocket(address, host)
        assert status.endswith(" 101 Switching Protocols")
        second, status = _websocket(address, host)
        assert status.endswith(" 101 Switching Protocols")
        with httpx.Client(base_url=address) as client:
            full = client.get("/")
            assert full.status_code == 503
            assert "tab limit reached (2 open)" in full.text and "--max-tabs" in full.text
            third, status = _websocket(address, host)
            with third:
                assert status == "HTTP/1.1 503 Service Unavailable"
            _until(lambda: len(_tabs(process)) == 2)  # the third started none
            first.close()  # a tab closed: room for another
            _until(lambda: client.get("/").status_code == 200)
        second.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "read_only"),
    [
        ([], False),
        (["--readonly"], True),
        (["--bind", "0.0.0.0"], True),
        (["--bind", "0.0.0.0", "--no-readonly"], False),
    ],
)
def test_read_only_by_default_off_loopback_in_every_tab(
    args: list[str], read_only: bool, sim: SimThread, tmp_path: Path
) -> None:
    with web_process(
        "--url", sim.url, "--db", str(tmp_path / "db"), *args, env={"SPECMON_WEB_TOKEN": TOKEN}
    ) as (process, address, _):
        assert process.stdout is not None
        process.stdout.readline()  # every tab shares one sampler
        said = process.stdout.readline() if read_only else ""
        assert said.startswith("specmon web: read-only: b, s, d and exports are off") is read_only
        local = address.replace("0.0.0.0", "127.0.0.1")
        host = local.removeprefix("http://")
        handshake = _websocket(local, host, cookie=_cookie(local, TOKEN))
        with handshake[0]:
            assert handshake[1].endswith(" 101 Switching Protocols")
            _until(lambda: len(_tabs(process)) == 1)
            assert (_tabs(process)[0].cmdline()[-1] == "--readonly") is read_only


@pytest.mark.parametrize("name", ["http://dash.example", "dash.example:80", "dash/x", "a b"])
def test_a_bad_allowed_host_is_one_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["web", "--allow-host", name])
    assert exited.value.code == 2
    assert (
        f"argument --allow-host: not a host name (no scheme, port or path): {name!r}"
        in capsys.readouterr().err
    )


def test_a_taken_port_is_one_line(
    sim: SimThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code = main(
            ["web", "--url", sim.url, "--db", str(tmp_path / "db"), "--web-port", str(port)]
        )
    assert code == 1  # as `exporter` and `agent` say a taken port (docs/usage.md, exit codes)
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


@pytest.mark.slow
def test_dashboard_options_go_before_or_after_web(sim: SimThread, tmp_path: Path) -> None:
    for args in (["--url", sim.url, "web"], ["web", "--url", sim.url]):
        command = [sys.executable, "-m", "specmon", *args, "--bind", "nope.invalid"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 2 and "--bind nope.invalid: not an address" in done.stderr


@pytest.mark.slow
def test_a_token_file_is_read_and_others_reading_it_is_warned(
    sim: SimThread, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    with serving(
        "--url", sim.url, "--db", str(tmp_path / "db"), "--token-file", str(token_file)
    ) as (address, line):
        assert line.startswith(f"specmon: warning: token file {token_file} is readable by others")
        with httpx.Client(base_url=address) as client:
            assert client.get("/").status_code == 401
            assert client.get(f"/?token={TOKEN}", follow_redirects=True).status_code == 200


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--token-file", "/nonexistent/token"], "cannot read token file /nonexistent/token: "),
        (
            ["--token-env", "SPECMON_TEST_UNSET"],
            "--token-env SPECMON_TEST_UNSET: that environment variable is not set",
        ),
    ],
)
def test_a_missing_token_is_one_line(
    args: list[str], said: str, sim: SimThread, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["web", "--url", sim.url, *args]) == 2
    assert capsys.readouterr().err.startswith(f"specmon: error: {said}")
