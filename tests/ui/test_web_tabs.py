"""`specmon web`'s tabs bounded (issue 36): sizes clamped, a browser's garbage ignored, and a tab
whose process will not quit reaped with its whole process group, counted against the cap until
it is gone. The server runs in-process; a tab is a real process."""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import psutil
import pytest
from aiohttp import WSMessage, WSMsgType, web

from specmon.ui import web_tabs
from specmon.ui.web_server import DashboardServer
from specmon.ui.web_tabs import MAX_HEIGHT, MAX_WIDTH, clamp_size, relay_browser

# A tab that says it is a Textual app, starts a child in its group, ignores SIGTERM and never
# reads its stdin (so never hears "quit"): the worst a stuck dashboard does.
STUBBORN = shlex.join(
    [
        sys.executable,
        "-c",
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"subprocess.Popen([{sys.executable!r}, '-c', 'import time; time.sleep(600)'])\n"
        "sys.stdout.write('__GANGLION__\\n'); sys.stdout.flush()\n"
        "time.sleep(600)\n",
    ]
)


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        ("10000", "10000", (MAX_WIDTH, MAX_HEIGHT)),
        (10**9, 10**9, (MAX_WIDTH, MAX_HEIGHT)),
        ("120", "40", (120, 40)),
        ("-5", "0", (2, 2)),
        ("9" * 5000, "x", (80, 24)),  # more digits than int() reads; not a number
        (None, None, (80, 24)),
        (True, 3.5, (80, 24)),
    ],
)
def test_a_size_is_clamped(width: object, height: object, expected: tuple[int, int]) -> None:
    assert clamp_size(width, height) == expected


class _Socket:
    """What `relay_browser` reads: messages, then the end; and what it answers."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.sent: list[Any] = []

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Any]:
        for text in self.texts:
            yield WSMessage(WSMsgType.TEXT, text, None)
        yield WSMessage(WSMsgType.BINARY, b"\x00", None)

    async def send_json(self, data: Any) -> None:
        self.sent.append(data)


class _Tab:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def set_terminal_size(self, width: int, height: int) -> None:
        self.calls.append(("resize", (width, height)))

    async def send_bytes(self, data: bytes) -> bool:
        self.calls.append(("stdin", data))
        return True

    async def blur(self) -> None:
        self.calls.append(("blur", None))

    async def focus(self) -> None:
        self.calls.append(("focus", None))


async def test_resizes_are_clamped_and_garbage_ignored() -> None:
    texts = [
        json.dumps(["resize", {"width": 10000, "height": 10000}]),
        "not json",
        json.dumps({"resize": 1}),
        json.dumps(["resize", {"width": "12"}]),
        json.dumps(["stdin"]),
        json.dumps(["stdin", "q"]),
        json.dumps(["ping", "t1"]),
        json.dumps(["focus"]),
        "[]",
    ]
    browser, tab = _Socket(texts), _Tab()
    await relay_browser(browser, tab)  # type: ignore[arg-type]
    assert tab.calls == [("resize", (MAX_WIDTH, MAX_HEIGHT)), ("stdin", b"q"), ("focus", None)]
    assert browser.sent == [["pong", "t1"]]


async def _until(condition: Callable[[], bool], limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def _handshake(port: int, query: str) -> tuple[asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        (
            f"GET /ws?{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    return writer, await reader.readline()


@pytest.mark.slow
async def test_a_stuck_tab_is_reaped_with_its_group_and_counted_until_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36: a websocket closed mid-frame left its tab process blocked, deaf to SIGTERM and
    uncounted by --max-tabs; six cycles under --max-tabs 2 left 8 processes."""
    monkeypatch.setattr(web_tabs, "QUIT_GRACE_S", 0.3)
    monkeypatch.setattr(web_tabs, "TERM_GRACE_S", 0.3)
    server = DashboardServer(STUBBORN, token=None, hosts=frozenset({"127.0.0.1"}), max_tabs=1)
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        browser, status = await _handshake(port, "width=10000&height=10000")
        assert b" 101 " in status
        await _until(lambda: any(tab.process for tab in server.tabs))
        process = next(iter(server.tabs)).process
        assert process is not None
        leader = psutil.Process(process.pid)
        assert leader.environ()["COLUMNS"] == str(MAX_WIDTH)
        assert leader.environ()["ROWS"] == str(MAX_HEIGHT)
        await _until(lambda: bool(leader.children()))
        child = leader.children()[0]
        refused, status = await _handshake(port, "width=80&height=24")
        assert status.startswith(b"HTTP/1.1 503")  # the stuck tab counts
        refused.close()
        browser.transport.abort()  # the browser is gone, mid-frame
        await _until(lambda: server.open_tabs == 0)
        assert process.returncode == -signal.SIGKILL  # it ignored quit and SIGTERM
        assert _gone(child)  # its group went with it
        assert server.tabs == set()
        again, status = await _handshake(port, "width=80&height=24")
        assert b" 101 " in status  # room again
        again.transport.abort()
        await _until(lambda: server.open_tabs == 0)
    finally:
        await runner.cleanup()
        server.kill_tabs()


def _gone(process: psutil.Process) -> bool:
    """Ended (a zombie counts: its parent died, and who reaps it is this container's init)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
