"""`specmon web`'s hub: one `LocalFeed` that every browser tab's dashboard subscribes to.

textual-serve starts one dashboard process per browser connection. Each one reads its feed from
here (`HubFeed`) instead of sampling the server itself, so N tabs mean one sampler, one probe
stream and one bench at a time; a baseline one tab takes reaches every tab.

The socket is a unix socket in a directory only this user can enter (0700). Frames are a 4-byte
big-endian length and a body. Hub to tab: first the `MonitorConfig`, then each `FeedSink` call
as (name, args), pickled: the dataclasses travel whole, and a tab trusts the hub that started it.
Tab to hub: JSON requests (bench, cancel, pause, follow), which the hub checks; the hub never
unpickles what a tab sends.
"""

from __future__ import annotations

import asyncio
import copyreg
import io
import json
import pickle
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specmon.config import MonitorConfig
from specmon.errors import SpecmonError
from specmon.measure.snapshot import SnapshotKind
from specmon.model import Sample, Snapshot
from specmon.session.baselines import BaselineOrigin
from specmon.session.feed import FeedSink, LocalFeed
from specmon.session.view import BenchView
from specmon.session.watch import ProbeOutcome

_LENGTH = struct.Struct(">I")
MAX_REQUEST = 64 * 1024  # a tab's requests are a few hundred bytes
MAX_BACKLOG = 8 * 1024 * 1024  # bytes queued for a tab that stopped reading: it is dropped
SINK_CALLS = frozenset(
    ("sample", "baseline_sample", "probe_done", "probe_failed", "telemetry_failed",
     "probe_paused", "bench_progress", "bench_done", "bench_failed")
)  # fmt: skip


def _frame(body: bytes) -> bytes:
    return _LENGTH.pack(len(body)) + body


def read_only(mapping: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """A MappingProxyType again, on the tab's side (pickle finds it here by name)."""
    return MappingProxyType(mapping)


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return read_only, (dict(proxy),)


_DISPATCH = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}
"""How the frozen dataclasses' read-only mappings pickle (pickle refuses MappingProxyType)."""


def _pickled(value: object) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(value)
    return buffer.getvalue()


class Hub:
    """Runs one `LocalFeed` and fans its reports out to every subscribed tab."""

    def __init__(self, feed: LocalFeed, directory: Path, *, read_only: bool = False) -> None:
        """Args:
        feed: The one feed of this `specmon web`.
        directory: A directory only this user can enter (0700); the socket goes in it.
        read_only: Refuse benches and pausing the probe every tab shares (the tabs' keys for
            them are off: a tab that asks anyway is dropped).
        """
        self.feed = feed
        self.read_only = read_only
        self.path = directory / "hub.sock"
        self.subscribed = 0
        """Tabs that have subscribed so far (not only those still open)."""
        self._tabs: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._bench: BenchView | None = None

    async def run(self) -> None:
        """Listen for tabs and run the feed, until cancelled."""
        server = await asyncio.start_unix_server(self._serve_tab, path=str(self.path))
        try:
            await self.feed.run(_Broadcast(self))
        finally:
            server.close()
            for writer in list(self._tabs):
                writer.close()  # each tab's handler sees the end and returns
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _serve_tab(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hello = [_pickled(self.feed.config)]
        # A tab that opens mid-bench or after a pause sees them as the others do.
        if self.feed.probe_is_paused:
            hello.append(_pickled(("probe_paused", (True,))))
        if self._bench is not None:
            hello.append(_pickled(("bench_progress", (self._bench,))))
        writer.write(b"".join(map(_frame, hello)))
        self._tabs.add(writer)
        self.subscribed += 1
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
        try:
            while True:
                (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
                if length > MAX_REQUEST:
                    return
                self._request(json.loads(await reader.readexactly(length)))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return  # the tab closed, or sent what no tab sends
        finally:
            self._tabs.discard(writer)
            self._handlers.discard(handler)
            writer.close()

    def _request(self, request: Any) -> None:
        feed = self.feed
        config = feed.config
        match request:
            case {
                "op": "bench",
                "kind": str(kind),
                "url": str(url),
                "origin": origin,
                "label": label,
            } if not self.read_only and url in (config.url, config.baseline_url):
                feed.start_bench(
                    SnapshotKind(kind),
                    url,
                    BaselineOrigin(origin) if origin is not None else None,
                    label if isinstance(label, str) else None,
                )
            case {"op": "cancel"}:
                feed.cancel_bench()
            case {"op": "pause", "paused": bool(paused)} if not self.read_only:
                # One probe for every tab: a read-only viewer must not stop it for the others.
                feed.pause_probe(paused)
                self.send("probe_paused", paused)
            case {"op": "follow", "url": url} if url is None or isinstance(url, str):
                feed.follow_baseline_server(url)
            case _:
                raise ValueError(f"not a request: {request!r}")

    def send(self, name: str, *args: Any) -> None:
        """One `FeedSink` call to every tab; a tab too far behind is dropped."""
        if name == "bench_progress":
            self._bench = args[0]
        elif name in ("bench_done", "bench_failed"):
            self._bench = None
        body = _frame(_pickled((name, args)))
        for writer in list(self._tabs):
            if writer.transport.get_write_buffer_size() > MAX_BACKLOG:
                self._tabs.discard(writer)
                writer.close()
            else:
                writer.write(body)


class _Broadcast:
    """The `FeedSink` of the hub's feed: each call goes to every tab."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def sample(self, sample: Sample) -> None:
        self.hub.send("sample", sample)

    def baseline_sample(self, sample: Sample) -> None:
        self.hub.send("baseline_sample", sample)

    def probe_done(self, outcome: ProbeOutcome) -> None:
        self.hub.send("probe_done", outcome)

    def probe_failed(self, wall: float, error: str) -> None:
        self.hub.send("probe_failed", wall, error)

    def telemetry_failed(self, wall: float, error: str) -> None:
        self.hub.send("telemetry_failed", wall, error)

    def probe_paused(self, paused: bool) -> None:
        self.hub.send("probe_paused", paused)

    def bench_progress(self, progress: BenchView) -> None:
        self.hub.send("bench_progress", progress)

    def bench_done(
        self, snapshot: Snapshot, kind: SnapshotKind, origin: BaselineOrigin | None
    ) -> None:
        self.hub.send("bench_done", snapshot, kind, origin)

    def bench_failed(self, kind: SnapshotKind, error: str) -> None:
        self.hub.send("bench_failed", kind, error)

    def bench_note(self, wall: float, note: str) -> None:
        self.hub.send("bench_note", wall, note)


class HubFeed:
    """A tab's feed: what the hub's one `LocalFeed` reports; keys become requests to it."""

    def __init__(self, sock: socket.socket, wall: Callable[[], float] = time.time) -> None:
        """Use `HubFeed.connect`."""
        self._sock = sock
        self._writer: asyncio.StreamWriter | None = None
        self._unsent: list[bytes] = []  # asked before `run` connected: sent once it has
        self.wall = wall

    @classmethod
    def connect(cls, path: str) -> tuple[HubFeed, MonitorConfig]:
        """Subscribe to the hub at `path`; returns the feed and the hub's configuration.

        Blocking: a tab calls it before its app (and event loop) starts.

        Raises:
            SpecmonError: No hub answers there.
        """
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            config = pickle.loads(_recv_frame(sock))
        except (OSError, EOFError) as exc:
            sock.close()
            raise SpecmonError(f"no specmon web hub at {path}: {exc}") from None
        if not isinstance(config, MonitorConfig):
            sock.close()
            raise SpecmonError(f"not a specmon web hub at {path}")
        return cls(sock), config

    async def run(self, sink: FeedSink) -> None:
        """Hand every report of the hub to `sink` until cancelled or the hub stops."""
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        self._writer.writelines(self._unsent)
        self._unsent.clear()
        try:
            while True:
                (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
                name, args = pickle.loads(await reader.readexactly(length))
                if name in SINK_CALLS:
                    getattr(sink, name)(*args)
        except (asyncio.IncompleteReadError, ConnectionError):
            sink.probe_failed(self.wall(), "the specmon web server stopped")
        finally:
            self._writer.close()
            self._writer = None

    def _ask(self, **request: Any) -> None:
        frame = _frame(json.dumps(request).encode())
        if self._writer is None:
            self._unsent.append(frame)
        else:
            self._writer.write(frame)

    def follow_baseline_server(self, url: str | None) -> None:
        """Ask the hub to sample the baseline's server."""
        self._ask(op="follow", url=url)

    def start_bench(
        self, kind: SnapshotKind, url: str, origin: BaselineOrigin | None, label: str | None
    ) -> None:
        """Ask the hub to bench `url`: every tab sees its progress and result."""
        self._ask(
            op="bench",
            kind=kind.value,
            url=url,
            origin=origin.value if origin else None,
            label=label,
        )

    def cancel_bench(self) -> bool:
        """Ask the hub to cancel its bench (True: whether it was too late shows in the log)."""
        self._ask(op="cancel")
        return True

    def pause_probe(self, paused: bool) -> None:
        """Ask the hub to pause or resume the one probe: every tab follows."""
        self._ask(op="pause", paused=paused)


def _recv_frame(sock: socket.socket) -> bytes:
    (length,) = _LENGTH.unpack(_recv_exactly(sock, _LENGTH.size))
    return _recv_exactly(sock, length)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the hub closed the connection")
        data += chunk
    return data
