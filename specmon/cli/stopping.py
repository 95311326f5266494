"""SIGTERM and SIGHUP stop a headless command as Ctrl-C does, whatever SIGINT's disposition.

They used to be re-raised as SIGINT, for asyncio to turn into a clean cancellation; but a shell
starts `specmon … &` with SIGINT ignored, and then the re-raised SIGINT did nothing: `bench` ran
on and saved, `agent` never stopped. Here they cancel the command's main task themselves (what
asyncio does with a SIGINT), and raise KeyboardInterrupt where no event loop runs.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # Only outside the event loop (opening the store, `snapshots`): inside it, `run` has the
    # loop take these signals, since an exception raised in whatever frame the signal lands in
    # (a task of a TaskGroup inside httpx's connect) escapes as an exception group.
    raise KeyboardInterrupt


def _stop_signals() -> list[signal.Signals]:
    """SIGTERM, and SIGHUP unless it is ignored: `nohup specmon agent` must outlive its shell."""
    signums = [signal.SIGTERM]
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signums.append(signal.SIGHUP)
    return signums


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP (unless ignored) raise KeyboardInterrupt, or cancel
    the coroutine `run` is running; the previous handlers come back on leaving."""
    previous = {signum: signal.signal(signum, _interrupt) for signum in _stop_signals()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`; SIGTERM and SIGHUP cancel it and raise KeyboardInterrupt.

    Only the signals `stopped_by_signals` took are handled, so an ignored SIGHUP stays ignored
    and the dashboard's own handlers are left alone.

    Raises:
        KeyboardInterrupt: A stop signal cancelled `main` (its cleanups have run).
    """
    signalled = False

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None  # asyncio.run runs this coroutine as a task

        def stop() -> None:
            nonlocal signalled
            signalled = True
            task.cancel()

        # The loop's handlers wake it through its self-pipe, whichever thread the signal lands on.
        signums = [s for s in _stop_signals() if signal.getsignal(s) is _interrupt]
        for signum in signums:
            loop.add_signal_handler(signum, stop)
        try:
            return await main
        finally:
            for signum in signums:
                loop.remove_signal_handler(signum)  # which leaves SIG_DFL: put ours back
                signal.signal(signum, _interrupt)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if signalled:
            raise KeyboardInterrupt from None
        raise
