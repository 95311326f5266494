"""Server-sent events read from a byte stream, as the HTML standard defines them.

Every probe reads its stream through `EventReader`, whichever client read the bytes: a stream
event is one decode step, so this runs ~40 times a second per probe and is kept to a split of
each chunk, on bytes as they came (no text iterator in front of it).
"""

from __future__ import annotations

from specmon.errors import ResponseTooLarge

_LINE_ENDS = (b"\r\n", b"\n", b"\r")


class EventReader:
    """Turns chunks of an event stream into the `data` of each event.

    Lines end in CRLF, LF or CR; a line starting with `:` is a comment; `data` fields are joined
    by newlines; other fields are read and ignored. A blank line ends an event: one with data
    fields yields its data (empty data too), one without yields nothing. At most `limit` bytes
    may come between two ends of events (a line is buffered until its end: an endless one
    would otherwise grow without bound).
    """

    def __init__(self, url: str, limit: int) -> None:
        """Args:
        url: The stream's address, for the error.
        limit: The most bytes between two ends of events.
        """
        self.url = url
        self.limit = limit
        self._partial = b""
        self._skip_lf = False  # a CR ended the last chunk: a LF starting the next is its pair
        self._data: list[bytes] | None = None
        self._fields = False
        self._since_event = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The data of every event that `chunk` completes, in order.

        Raises:
            ResponseTooLarge: More than `limit` bytes without the end of an event.
        """
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._since_event += len(chunk)
        lines = (self._partial + chunk).splitlines(keepends=True)
        self._partial = lines.pop() if lines and not lines[-1].endswith(_LINE_ENDS) else b""
        self._skip_lf = bool(lines) and not self._partial and lines[-1].endswith(b"\r")
        events: list[str] = []
        for line in lines:
            self._line(line.rstrip(b"\r\n"), events)
        if self._since_event > self.limit:
            raise ResponseTooLarge(
                f"{self.url}: more than {self.limit / 2**20:g} MiB without a complete stream "
                "event; refused"
            )
        return events

    def _line(self, line: bytes, events: list[str]) -> None:
        if not line:
            if self._data is not None:
                events.append(b"\n".join(self._data).decode("utf-8", "replace"))
            if self._fields:
                self._since_event = len(self._partial)
            self._data, self._fields = None, False
            return
        if line.startswith(b":"):
            return
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        self._fields = True
        if name == b"data":
            if self._data is None:
                self._data = []
            self._data.append(value)
