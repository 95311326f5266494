"""The terminal driver: Textual's Linux/macOS driver, with an input thread that never polls.

Textual's input thread (`LinuxDriver.run_input_thread`, Textual 8.2) waits for input in 100 ms
polls and only between polls checks whether a lone ESC byte has waited long enough to be the
Esc key: Esc took 100–200 ms to act. Quitting joined that thread, then waited one more 100 ms
poll: the terminal came back 200 ms after `q`. This thread sleeps until input arrives, until the
pending ESC is due, or until the driver stops (a byte on a wake-up pipe), and wakes for nothing
else — ten wake-ups a second fewer while idle, too. It reads the driver's and the parser's
private state: `check` stands it down (Textual's own driver then) where those differ.
"""

from __future__ import annotations

import inspect
import os
import selectors
from codecs import getincrementaldecoder
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from specmon.ui.tuning import Mismatch, active

if TYPE_CHECKING:
    from textual.app import App
    from textual.driver import Driver

POLL_S = 0.1
"""Textual's poll: only used if its parser stops saying when a pending ESC is due."""
PRIVATE_NAMES = ("textual._parser", "textual._time", "textual._xterm_parser", "_writer_thread",
                 "_debug", "_timeout_time", "_driver")  # fmt: skip
"""Textual's modules imported, LinuxDriver's and the parser's fields read, the App's driver."""
_DRIVER_FIELDS = ("_writer_thread", "_debug", "exit_event", "fileno")
_DRIVER_METHODS = ("run_input_thread", "disable_input", "write", "close", "process_message")


def check() -> None:
    """LinuxDriver sets the fields and has the methods this uses; the parser times its ESC."""
    textual_classes = [cls for cls in LinuxDriver.__mro__ if cls.__module__.startswith("textual.")]
    source = "".join(inspect.getsource(cls) for cls in textual_classes)
    missing = [name for name in _DRIVER_FIELDS if f"self.{name} =" not in source]
    missing += [name for name in _DRIVER_METHODS if not callable(getattr(LinuxDriver, name, None))]
    if missing:
        raise Mismatch(f"LinuxDriver lacks {', '.join(missing)}")
    parser = XTermParser(False)
    if not hasattr(parser, "_timeout_time") or not callable(getattr(parser, "tick", None)):
        raise Mismatch("XTermParser has no _timeout_time or tick")


def apply() -> None:
    """Nothing global: the app asks for `prompt_driver` (`app_hooks.driver_class`)."""


class PromptDriver(LinuxDriver):
    """`LinuxDriver` whose input thread acts on keys, the Esc key and an exit at once."""

    def __init__(self, app: App[Any], **kwargs: Any) -> None:
        """Textual's driver, and the pipe that wakes the input thread when input stops."""
        super().__init__(app, **kwargs)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self.after_write: Callable[[], None] | None = None
        """Called after each write (on the event loop, as Textual writes): the app's hook."""

    def disable_input(self) -> None:
        """Stop the input thread without waiting for a poll."""
        # Textual's disable_input sets `exit_event`, then joins the thread; the byte written
        # first wakes it, and it waits for that event before it looks at it (`_run`).
        os.write(self._wake_w, b"\0")
        super().disable_input()

    def write(self, data: str) -> None:
        """Textual's write, unless the terminal is gone.

        Textual's writer thread ends at the first failed write (the terminal closed: tmux
        killed, an SSH link dropped); its queue then fills, and the next write blocked the app
        for good, deaf to SIGTERM. Without the thread there is nowhere to write to.
        """
        writer = self._writer_thread
        if writer is not None and not writer.is_alive():
            return
        super().write(data)
        if self.after_write is not None:
            self.after_write()

    def close(self) -> None:
        """Textual's clean-up, and the wake-up pipe's."""
        writer = self._writer_thread
        if writer is not None and not writer.is_alive():
            self._writer_thread = None  # ended already: stopping it would wait on its queue
        super().close()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def run_input_thread(self) -> None:
        """Read keys until input is disabled: Textual's loop, minus the poll."""
        while True:  # a wake-up left from an earlier stop (Ctrl+Z, then back)
            try:
                if not os.read(self._wake_r, 64):
                    break
            except BlockingIOError:
                break
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        # select(), as Textual: macOS's kqueue cannot watch a terminal.
        with selectors.SelectSelector() as selector:
            selector.register(self.fileno, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            try:
                while not self.exit_event.is_set():
                    for key, _ in selector.select(_until_due(parser)):
                        if key.fd == self._wake_r:
                            self.exit_event.wait(POLL_S)  # set just after the byte was written
                            continue
                        data = decode(os.read(self.fileno, 4096))
                        if not data:  # stdin is a pipe that was closed
                            return
                        for event in parser.feed(data):
                            self.process_message(event)
                    for event in parser.tick():
                        self.process_message(event)
            finally:
                try:
                    for _ in parser.feed(""):
                        pass
                except (EOFError, ParseError):
                    pass


def _until_due(parser: XTermParser) -> float | None:
    """Seconds until the parser's pending ESC is due as the Esc key; None when none is."""
    due = getattr(parser, "_timeout_time", get_time() + POLL_S)  # Textual 8.2's private field
    return None if due is None else max(0.0, due - get_time())


def prompt_driver(default: type[Driver]) -> type[Driver]:
    """`PromptDriver` where Textual would use its Linux driver (installed), else Textual's."""
    return PromptDriver if active("driver") and default is LinuxDriver else default


def prompt_driver_of(app: App[Any]) -> PromptDriver | None:
    """The app's driver where it is a `PromptDriver` (it reports its writes)."""
    driver = getattr(app, "_driver", None)  # Textual 8.2's private field
    return driver if isinstance(driver, PromptDriver) else None
