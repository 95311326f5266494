"""Reading the dashboard a browser shows: the text of the page's terminal (xterm.js)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM = "/usr/bin/chromium"

# textual-serve's page keeps its xterm.js Terminal in a closure. Its constructor assigns
# `this.terminal = new Terminal(…)`; this setter on Object.prototype sees that assignment,
# keeps the terminal where the test can read it, and puts a plain property in its place.
KEEP_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true,
                                             enumerable: true});
    window.specmonTerminal = value;
  },
});
"""
# What the terminal shows, one line per row (its buffer: what xterm.js draws on the canvas).
SCREEN = """() => {
  const terminal = window.specmonTerminal;
  if (!terminal) return "";
  const buffer = terminal.buffer.active, rows = [];
  for (let i = 0; i < terminal.rows; i++) {
    const line = buffer.getLine(buffer.viewportY + i);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
}"""


@dataclass
class Tab:
    """One browser tab on `specmon web`."""

    page: Any

    def screen(self) -> str:
        """The dashboard's text as the browser's terminal holds it."""
        text: str = self.page.evaluate(SCREEN)
        return text

    def wait_for(self, pattern: str, limit_s: float = 60.0) -> re.Match[str]:
        """The first match of `pattern` on the screen, once it shows (fails after `limit_s`).

        The browser polls its own terminal (Playwright's wait_for_function); `pattern` is one
        that JavaScript and Python read alike.
        """
        try:
            self.page.wait_for_function(
                f"(pattern) => new RegExp(pattern).test(({SCREEN})())",
                arg=pattern,
                timeout=limit_s * 1000,
            )
        except PlaywrightTimeout:
            raise AssertionError(f"{pattern!r} never showed:\n{self.screen()}") from None
        found = re.search(pattern, self.screen())
        assert found, self.screen()
        return found

    def wait_until(self, condition: Callable[[], bool], limit_s: float = 60.0) -> None:
        """Let the browser run until `condition` (of this process) holds; fails after
        `limit_s`."""
        deadline = time.monotonic() + limit_s
        while not condition():
            assert time.monotonic() < deadline, "condition not reached"
            self.page.wait_for_timeout(50)

    def press(self, key: str) -> None:
        """Type `key` into the terminal, as a user would."""
        self.page.locator("#terminal").click()
        self.page.keyboard.press(key)


def open_tab(browser: Any, url: str) -> Tab:
    """A new tab on `url`, reading only from this machine (the page asks for a web font)."""
    page = browser.new_page()
    page.add_init_script(KEEP_TERMINAL)
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/]).*"), lambda route: route.abort())
    page.goto(url)
    return Tab(page)


@dataclass
class Web:
    """A running `specmon web`."""

    process: subprocess.Popen[str]
    url: str
    db: Path
    output: str = ""
    """What it printed, once stopped."""

    def tab(self, browser: object) -> Tab:
        """A new browser tab on it."""
        return open_tab(browser, self.url)


@contextmanager
def serving(db: Path, *options: str) -> Iterator[Web]:
    """`specmon web` on a free port with the store `db`, polling every 0.5 s and probing every
    second, `options` (its `--url` among them) added; stopped after."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specmon",
            "web",
            "--db",
            str(db),
            "--web-port",
            "0",
            "--interval",
            "0.5",
            "--probe-every",
            "1",
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    web: Web | None = None
    try:
        first = process.stdout.readline()
        found = re.search(r" on (http://\S+)$", first.strip())
        assert found, first
        web = Web(process, found.group(1), db)
        yield web
    finally:
        process.terminate()
        process.wait(timeout=30)
        output = process.stdout.read()
        process.stdout.close()
        if web is not None:
            web.output = output
