"""`SimThread`: a `SimServer` on its own event loop in a daemon thread, for synchronous callers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

from specmon.sim.config import SimConfig
from specmon.sim.server import SimServer

T = TypeVar("T")


class SimThread:
    """Run a `SimServer` in a background thread (CLI tests, the demo).

    Example:
        with SimThread(SimConfig(version="0.5.17")) as sim:
            httpx.get(sim.url + "/server_info")
            sim.call(sim.server.restart)
    """

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="specmon-sim", daemon=True)
        self._server: SimServer | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def server(self) -> SimServer:
        """The server (only touch it from its loop, e.g. through `call`)."""
        if self._server is None:
            raise RuntimeError("SimThread is not running")
        return self._server

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        return self.server.url

    def call(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Run `coro_fn()` on the server's loop and wait for its result.

        Args:
            coro_fn: A zero-argument coroutine function, e.g. `sim.server.restart` or
                `lambda: sim.server.restart(new_config)`.
        """

        async def runner() -> T:
            return await coro_fn()

        return asyncio.run_coroutine_threadsafe(runner(), self._loop).result()

    def __enter__(self) -> SimThread:
        self._thread.start()

        async def boot() -> SimServer:
            server = SimServer(self.config)
            await server.start()
            return server

        try:
            self._server = asyncio.run_coroutine_threadsafe(boot(), self._loop).result()
        except BaseException:
            self._shutdown_loop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self.call(self._server.stop)
            self.call(_finish_the_rest)
        self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        """Stop the loop and close it once the thread has ended."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


async def _finish_the_rest(limit_s: float = 5.0) -> None:
    """Cancel what still runs on the loop and wait for it (bounded): a handler whose client went
    away mid-stream would otherwise be destroyed pending when the loop closes, and its cleanup
    would run on a closed loop."""
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    if rest:
        await asyncio.wait(rest, timeout=limit_s)
    # A cancelled accept or handler closes its transport with `call_soon`: let those callbacks
    # run before the loop stops, or the socket is left open and warned about at collection,
    # in whatever test then runs.
    for _ in range(3):
        await asyncio.sleep(0)
