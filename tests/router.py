"""The simulator's router (`specmon.sim.router`) for tests: async, or on its own event loop in a
thread for a test that runs the CLI (its signal handlers need the main thread)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator, Sequence

from specmon.sim.router import router

__all__ = ["router", "router_thread"]


@contextlib.contextmanager
def router_thread(workers: Sequence[str]) -> Iterator[str]:
    """`router` on its own event loop in a thread; yields its URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-router", daemon=True)
    thread.start()
    serving = router(workers)
    try:
        yield asyncio.run_coroutine_threadsafe(serving.__aenter__(), loop).result()
    finally:
        asyncio.run_coroutine_threadsafe(serving.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
