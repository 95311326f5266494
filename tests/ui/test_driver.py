"""PromptDriver's input thread on a real pty: keys, a lone Esc, and a stop that ends it."""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import threading
import tty
from collections.abc import Iterator

import pytest
from textual import events
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message
from tuned import needs

from specmon.ui.tuning.driver import PromptDriver, prompt_driver

pytestmark = needs("driver")


class Inbox:
    """Stands in for the app: collects what the driver posts to it."""

    def __init__(self) -> None:
        self.keys: asyncio.Queue[str] = asyncio.Queue()

    async def _post_message(self, message: Message) -> bool:
        if isinstance(message, events.Key):
            await self.keys.put(message.key)
        return True


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """A pty in raw mode (keys arrive byte by byte, as from a terminal), and the signal
    handlers the driver replaces, put back afterwards."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT, signal.SIGWINCH)}
    ours, theirs = pty.openpty()
    tty.setraw(theirs)
    yield ours, theirs
    os.close(ours)
    os.close(theirs)
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


async def test_keys_and_a_lone_esc_arrive_and_the_stop_ends_the_thread(
    terminal: tuple[int, int],
) -> None:
    ours, theirs = terminal
    inbox = Inbox()
    driver = PromptDriver(inbox, mouse=False)  # type: ignore[arg-type]
    driver.fileno = theirs
    thread = driver._key_thread = threading.Thread(target=driver.run_input_thread)
    thread.start()
    try:
        os.write(ours, b"q\x1b[Bi")  # a key, a sequence (down arrow), a key
        assert [await inbox.keys.get() for _ in range(3)] == ["q", "down", "i"]
        os.write(ours, b"\x1b")  # nothing follows: the Esc key, once ESCDELAY has passed
        assert await inbox.keys.get() == "escape"
    finally:
        driver.disable_input()  # returns once the thread has ended
        driver.close()
    assert not thread.is_alive()


class GoneTerminal:
    """A terminal that went away: every write fails as on a closed pty."""

    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")

    def flush(self) -> None:
        raise OSError(5, "Input/output error")

    def fileno(self) -> int:
        return -1


# Textual's writer thread dies of the failed write, as it does on a closed terminal.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_a_terminal_gone_mid_write_neither_blocks_writes_nor_the_close() -> None:
    driver = PromptDriver(Inbox(), mouse=False)  # type: ignore[arg-type]
    writer = driver._writer_thread = WriterThread(GoneTerminal())  # type: ignore[arg-type]
    writer.start()
    driver.write("frame")
    writer.join(timeout=10)  # the thread ends at the failed write, as Textual's does
    assert not writer.is_alive()
    done = threading.Event()

    def draw_then_quit() -> None:
        for _ in range(MAX_QUEUED_WRITES + 10):  # more than its queue holds
            driver.write("frame")
        driver.close()
        done.set()

    threading.Thread(target=draw_then_quit, daemon=True).start()
    assert done.wait(timeout=10), "a write or the close blocked on the dead writer's queue"


def test_only_the_linux_driver_is_replaced() -> None:
    assert prompt_driver(LinuxDriver) is PromptDriver
    assert prompt_driver(HeadlessDriver) is HeadlessDriver  # tests, and Windows's keeps its own
