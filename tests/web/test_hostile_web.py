"""`specmon web` against a hostile server (issue 36 §1, tests/hostile/server.py's cases): a
browser tab opens on it, shows the dashboard and its `i` screen, and whatever the server sends,
the web server and the tab's dashboard keep running, no escape the server wrote reaches the
browser as one, the page's terminal holds no control character, and no traceback is printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hostile.checks import CONTROL, controls
from hostile.server import CASES, IDS, INFO_PATHS, Case, HostileThread
from web_helpers import Tab, open_tab, serving

DASHBOARD = r"q quit"
DIAGNOSTICS = r"Sources \(age of the last good reading"
CLOSED = "(age of the last good reading"
INJECTED = ("\x1b]0;pwned", "\x1b]8;;http://evil/")
"""The server's escapes as sequences a terminal acts on: its window title (OSC 0) and its link
(OSC 8), as they would reach the browser raw."""
RAW = ("\x9b", "\x00")
"""A one-byte CSI and a NUL: never in a dashboard's own output."""


@pytest.fixture
def frames(browser: Any) -> Iterator[list[bytes | str]]:
    """What every websocket of a page opened in this test received (the tab's terminal output)."""
    received: list[bytes | str] = []

    def watch(page: Any) -> None:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda f: received.append(f)))

    browser.on("page", watch)
    yield received
    browser.remove_listener("page", watch)


def _asked(server: HostileThread, case: Case) -> int:
    """How far specmon got with the server: probes sent when it reads it, else server-info
    reads (what a down server is asked again)."""
    requests = server.server.requests
    if case.reachable:
        return requests["/generate"] + requests["/v1/completions"]
    return sum(requests[path] for path in INFO_PATHS)


def _tabs(pid: int) -> list[psutil.Process]:
    return [
        p
        for p in psutil.Process(pid).children(recursive=True)
        if "specmon.cli.web_tab" in " ".join(p.cmdline())
    ]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_tab_on_a_hostile_server(
    case: Case, browser: Any, frames: list[bytes | str], tmp_path: Path
) -> None:
    with (
        HostileThread(case) as server,
        serving(
            tmp_path / "db",
            *("--url", server.url, "--probe-tokens", "16"),
            *("--connect-timeout", "1", "--read-timeout", "1"),
        ) as web,
    ):
        tab: Tab = open_tab(browser, web.url)
        tab.wait_for(DASHBOARD)
        asked = _asked(server, case)
        tab.wait_until(lambda: _asked(server, case) >= asked + 2)  # the hostile answers, read
        tab.press("i")
        tab.wait_for(DIAGNOSTICS)
        tab.press("Escape")
        tab.wait_until(lambda: CLOSED not in tab.screen())
        tab.wait_for(DASHBOARD)
        assert web.process.poll() is None
        assert len(_tabs(web.process.pid)) == 1  # its dashboard still runs
        screen = tab.screen()
        assert not CONTROL & set(screen), controls(screen)
        written = "".join(
            f.decode("utf-8", "replace") if isinstance(f, bytes) else f for f in frames
        )
        assert written, "the tab sent the browser nothing"
        for sequence in (*INJECTED, *RAW):
            assert sequence not in written, repr(sequence)
        tab.page.close()
    assert "Traceback" not in web.output, web.output
