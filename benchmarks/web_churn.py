"""`specmon web` under hostile tab churn: huge sizes, abrupt closes, more tabs than allowed.

Starts the simulator and `specmon web --max-tabs N` on it, then runs `--cycles` cycles; each
waits until the last cycle's tab processes are gone (the index page says there is room), opens
N + 1 raw websockets at once, every one asking for a 10000 x 10000 terminal (in the address and
again in a `resize` message), waits until each admitted tab's dashboard has sent its first
frame, reads what they draw for `--hold` seconds, then closes them all mid-frame (the socket
reset, no websocket close). All the while a sampler counts the tab processes under `specmon
web` and sums the RSS of it and all its descendants. At the end it waits for the last tabs to
go, and counts tracebacks in what `specmon web` printed.

    python benchmarks/web_churn.py --cycles 50 --max-tabs 2 \
        --out benchmarks/results/web-churn-YYYY-MM-DD.json

Prints one JSON object (also written to --out): the most tab processes seen at once, the most
total RSS, the tabs that were refused (503), the processes left once the churn stopped, and the
tracebacks printed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from specmon.sim import SimConfig, SimThread

HUGE = 10_000


def _tabs(web: psutil.Process) -> list[psutil.Process]:
    found = []
    for child in web.children(recursive=True):
        try:
            if "specmon.cli.web_tab" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            pass
    return found


def _rss_mib(web: psutil.Process) -> float:
    total = 0
    for process in (web, *web.children(recursive=True)):
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total / 2**20


class Sampler(threading.Thread):
    """Counts tab processes and sums RSS ten times a second; keeps the maxima."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.web = psutil.Process(pid)
        self.most_tabs = 0
        self.most_rss_mib = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            try:
                self.most_tabs = max(self.most_tabs, len(_tabs(self.web)))
                self.most_rss_mib = max(self.most_rss_mib, _rss_mib(self.web))
            except psutil.Error:
                return


def _masked(text: str) -> bytes:
    """A client's websocket text frame (masked, as a browser's are)."""
    payload = text.encode()
    mask = os.urandom(4)
    header = bytes([0x81])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def open_tab(host: str, port: int) -> tuple[socket.socket, str]:
    """A websocket asking for a HUGE x HUGE terminal: the socket and the status line."""
    connection = socket.create_connection((host, port), timeout=60)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET /ws?width={HUGE}&height={HUGE} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    connection.sendall(request.encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = connection.recv(4096)
        if not chunk:
            break
        answer += chunk
    status = answer.split(b"\r\n", 1)[0].decode()
    if " 101 " in status:
        resize = json.dumps(["resize", {"width": HUGE, "height": HUGE}])
        connection.sendall(_masked(resize))
    return connection, status


def abrupt_close(connection: socket.socket) -> None:
    """Reset the connection (SO_LINGER 0): a browser killed mid-frame."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


def _read_for(connections: list[socket.socket], seconds: float) -> int:
    """Read what the tabs send for `seconds` (their dashboards drawing); the bytes read."""
    got = 0
    deadline = time.monotonic() + seconds
    while connections and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(connections, [], [], left)
        for connection in ready:
            try:
                data = connection.recv(65536)
            except OSError:
                data = b""
            if not data:
                connections = [c for c in connections if c is not connection]
            got += len(data)
    return got


def settle_until(condition: Callable[[], bool], seconds: float) -> None:
    """Poll `condition` until true or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


def _wait_for_room(host: str, port: int, seconds: float = 30.0) -> None:
    """Until the index answers 200, not the limit page (the last cycle's tabs are reaped)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.create_connection((host, port), timeout=30) as connection:
            connection.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            if b" 200 " in connection.recv(64):
                return
        time.sleep(0.1)


def churn(cycles: int, max_tabs: int, hold: float) -> dict[str, Any]:
    """Run the cycles against a fresh `specmon web`; the figures."""
    with SimThread(SimConfig()) as sim, tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "web.log"
        with log.open("w") as out:
            web = subprocess.Popen(
                [sys.executable, "-m", "specmon", "web", "--url", sim.url, "--db",
                 f"{tmp}/db", "--web-port", "0", "--max-tabs", str(max_tabs)],
                stdout=out, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while not (found := re.search(r" on http://([^:]+):(\d+)/", log.read_text())):
            assert web.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        host, port = found.group(1), int(found.group(2))
        sampler = Sampler(web.pid)
        sampler.start()
        refused = admitted = framed = received = 0
        started = time.monotonic()
        try:
            for _ in range(cycles):
                _wait_for_room(host, port)
                settle_until(lambda: not _tabs(psutil.Process(web.pid)), 30)
                opened = [open_tab(host, port) for _ in range(max_tabs + 1)]
                for connection, status in opened:
                    if " 101 " in status:
                        admitted += 1
                        with contextlib.suppress(OSError):  # its first frame has begun
                            framed += bool(connection.recv(1))
                    elif " 503 " in status:
                        refused += 1
                received += _read_for([c for c, status in opened if " 101 " in status], hold)
                for connection, _ in opened:
                    abrupt_close(connection)
            elapsed = time.monotonic() - started
            settle_until(lambda: not _tabs(psutil.Process(web.pid)), 60)
            left = len(_tabs(psutil.Process(web.pid)))
        finally:
            sampler.done.set()
            sampler.join()
            web.terminate()
            web.wait(timeout=60)
        printed = log.read_text()
    return {
        "cycles": cycles,
        "max_tabs": max_tabs,
        "size_asked": f"{HUGE}x{HUGE}",
        "tabs_admitted": admitted,
        "tabs_refused": refused,
        "tabs_that_sent_a_frame": framed,
        "hold_s": hold,
        "mib_received": round(received / 2**20, 1),
        "seconds": round(elapsed, 1),
        "most_tab_processes": sampler.most_tabs,
        "most_total_rss_mib": round(sampler.most_rss_mib, 1),
        "tab_processes_left": left,
        "tracebacks_printed": printed.count("Traceback"),
    }


def main() -> None:
    """Run the churn and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--max-tabs", type=int, default=2)
    parser.add_argument(
        "--hold", type=float, default=2.0, help="seconds each tab is read before its reset"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    figures = churn(args.cycles, args.max_tabs, args.hold)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
