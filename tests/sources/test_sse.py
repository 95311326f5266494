"""The event-stream reader: the events of a stream whatever its line ends and chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specmon.errors import ResponseTooLarge
from specmon.sources.sse import EventReader

_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))
_EVENT = st.lists(_TEXT, min_size=1, max_size=3)  # an event's data lines


def _read(chunks: list[bytes], limit: int = 2**20) -> list[str]:
    reader = EventReader("http://s/generate", limit)
    return [data for chunk in chunks for data in reader.feed(chunk)]


@st.composite
def _streams(draw: st.DrawFn) -> tuple[list[str], bytes]:
    """Events, and a stream of them: any line end, comments and other fields between."""
    events = draw(st.lists(_EVENT, max_size=6))
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    parts = []
    for lines in events:
        if draw(st.booleans()):
            parts.append(": keep-alive" + end)
        if draw(st.booleans()):
            parts.append("event: message" + end + "id: 7" + end)
        for line in lines:  # one space after the colon is dropped: a line's own needs it
            space = " " if line.startswith(" ") else draw(st.sampled_from(["", " "]))
            parts.append("data:" + space + line + end)
        parts.append(end)
    return ["\n".join(lines) for lines in events], "".join(parts).encode()


@given(_streams(), st.lists(st.integers(min_value=1, max_value=40), max_size=30))
def test_every_event_whatever_the_chunking(
    stream: tuple[list[str], bytes], cuts: list[int]
) -> None:
    expected, raw = stream
    chunks, at = [], 0
    for size in cuts:
        chunks.append(raw[at : at + size])
        at += size
    chunks.append(raw[at:])
    assert _read(chunks) == expected


def test_a_leading_space_is_dropped_once_and_a_block_without_data_is_no_event() -> None:
    raw = b"data:  two spaces\n\nevent: ping\n\n: comment\n\ndata\n\n"
    assert _read([raw]) == [" two spaces", ""]


def test_a_crlf_split_between_chunks_ends_one_line() -> None:
    assert _read([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == ["a", "b"]


def test_an_event_still_open_at_the_end_is_not_yielded() -> None:
    assert _read([b"data: complete\n\ndata: cut off\n"]) == ["complete"]


def test_too_much_without_the_end_of_an_event_is_refused() -> None:
    reader = EventReader("http://s/generate", 100)
    assert reader.feed(b"data: " + b"x" * 50 + b"\n\n") == ["x" * 50]
    reader.feed(b": " + b"k" * 60 + b"\n")  # comments do not end an event
    with pytest.raises(ResponseTooLarge, match="http://s/generate: more than"):
        reader.feed(b"data: " + b"y" * 60)
