"""One browser tab of `specmon web`: its dashboard process, bounded and always reaped.

textual-serve's `AppService` runs a tab's process and relays its frames; three things it leaves
open are closed here. A browser chooses the terminal's size (`/ws?width=&height=`, `resize`
messages): 10000 x 10000 cells held one tab at 1 GB and 100% CPU, so sizes are clamped to
`MAX_WIDTH` x `MAX_HEIGHT`. A tab whose browser went mid-frame was left blocked writing to a
pipe nobody read, and was never waited for: here the frames keep being read (and dropped) until
the process ends, the process runs in its own process group, and closing a tab asks it to quit,
then sends the group SIGTERM, then SIGKILL (`stop`). And a browser that vanishes is no error:
nothing is logged for it, and what the process wrote to stderr is kept only while bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
from asyncio.subprocess import Process
from typing import Any

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

MAX_WIDTH = 500
MAX_HEIGHT = 200
"""The largest terminal a tab gets, in cells (a 4K screen at a small font is ~480 x 130)."""
MIN_SIZE = 2
QUIT_GRACE_S = 2.0
"""How long a closing tab's process gets to quit when asked, before SIGTERM."""
TERM_GRACE_S = 2.0
"""How long it gets after SIGTERM, before SIGKILL."""
STDERR_KEPT = 8 * 1024
"""The most of a tab's stderr kept (its last bytes: a crash's message)."""
_FRAME_TYPES = (b"D", b"M", b"P")


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A terminal size a browser asked for, as a tab gets it: whole cells, at most
    `MAX_WIDTH` x `MAX_HEIGHT`, at least `MIN_SIZE`; 80 x 24 for what is not a number."""
    return _clamp(width, 80, MAX_WIDTH), _clamp(height, 24, MAX_HEIGHT)


def _clamp(value: object, default: int, most: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        number = int(value) if isinstance(value, int | str) else default
    except ValueError:  # not digits, or more digits than int() reads
        number = default
    return max(MIN_SIZE, min(most, number))


class TabProcess(AppService):
    """One tab's dashboard process, in its own process group, relayed to one websocket."""

    def __init__(
        self, command: str, websocket: web.WebSocketResponse, downloads: DownloadManager
    ) -> None:
        """Args:
        command: The shell-quoted command line of the tab's dashboard.
        websocket: The browser's websocket (prepared).
        downloads: textual-serve's download manager (files a tab delivers).
        """
        super().__init__(
            command,
            write_bytes=self._send_bytes,
            write_str=self._send_str,
            close=self._close_browser,
            download_manager=downloads,
        )
        self.websocket = websocket
        self.closing = False
        """Set once the tab is being closed: what its process says from then on is dropped."""
        self.stderr = bytearray()
        self.relay: asyncio.Task[None] | None = None
        """The task relaying the process's frames to the browser (`run`), from `start`."""

    @property
    def process(self) -> Process | None:
        """The dashboard process (None before `start`)."""
        return self._process

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        # exec, not a shell: the pid is the dashboard's own, and its group is its own.
        self._process = process = await asyncio.create_subprocess_exec(
            *shlex.split(self.command),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def start(self, width: int, height: int) -> None:
        """Start the tab's process at this size and relay its frames."""
        await self._open_app_process(width, height)
        self.relay = asyncio.create_task(self.run())

    async def _close_browser(self) -> None:
        """The dashboard quit: close its websocket (the browser shows it ended)."""
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.websocket.close()

    async def _send_bytes(self, data: bytes) -> None:
        if not self.websocket.closed:
            with contextlib.suppress(ConnectionError, RuntimeError):  # the browser went
                await self.websocket.send_bytes(data)

    async def _send_str(self, data: str) -> None:
        if not self.websocket.closed:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.websocket.send_str(data)

    async def run(self) -> None:
        """Relay the process's frames until it ends (textual-serve's loop, which stopped
        reading when the browser went and so left the process blocked writing)."""
        process = self._process
        assert process is not None and process.stdout is not None
        stdout = process.stdout
        keeping = asyncio.create_task(self._keep_stderr())
        try:
            for _ in range(10):  # the prelude that says it is a Textual app
                line = await stdout.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            while True:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if self.closing or kind not in _FRAME_TYPES:
                    continue
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"M":
                    await self.on_meta(payload)
                else:
                    await self.on_packed(payload)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, KeyError):
            pass  # the process ended (or wrote what no dashboard writes)
        finally:
            await keeping
        if self.stderr and not self.closing:  # it ended on its own: say why, once
            text = self.stderr.decode("utf-8", "replace").strip()
            print(f"specmon web: a tab's dashboard ended:\n{text}", file=sys.stderr, flush=True)

    async def _keep_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        with contextlib.suppress(ConnectionError):
            while data := await process.stderr.read(4096):
                self.stderr += data
                del self.stderr[:-STDERR_KEPT]

    async def stop(self) -> None:
        """Close the tab: ask its process to quit, then SIGTERM its group, then SIGKILL;
        returns once the process is reaped."""
        self.closing = True
        process = self._process
        if process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        if process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_GRACE_S)
        for sent in (signal.SIGTERM, signal.SIGKILL):
            if await _ended(process, QUIT_GRACE_S if sent == signal.SIGTERM else TERM_GRACE_S):
                break
            kill_group(process, sent)
        await process.wait()
        if self.relay is not None:  # its pipes end with the process (or with its group)
            done, _ = await asyncio.wait([self.relay], timeout=TERM_GRACE_S)
            if not done:
                self.relay.cancel()
            self.relay = None


async def _ended(process: Process, seconds: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        return False
    return True


def kill_group(process: Process, sent: signal.Signals = signal.SIGKILL) -> None:
    """Send `sent` to a tab's process group (its own: `start_new_session`), while its leader is
    known to be unreaped (the group's id is then still its own)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sent)


async def relay_browser(websocket: web.WebSocketResponse, tab: TabProcess) -> None:
    """Hand what the browser sends to the tab until the websocket closes; anything that is not
    one of the page's messages is ignored, sizes clamped."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope: Any = json.loads(message.data)
        except ValueError:
            continue
        match envelope:
            case ["stdin", str(data), *_]:
                await tab.send_bytes(data.encode("utf-8", "replace"))
            case ["resize", {"width": width, "height": height}, *_]:
                await tab.set_terminal_size(*clamp_size(width, height))
            case ["ping", data, *_]:
                await websocket.send_json(["pong", data])
            case ["blur", *_]:
                await tab.blur()
            case ["focus", *_]:
                await tab.focus()
