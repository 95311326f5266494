"""Strip's caches made on first use (ui/tuning/strip_caches.py): the same Strip as Textual's,
fields and caches, but no cache until one is used."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from tuned import needs

from specmon.ui.tuning import strip_caches

pytestmark = needs("strip_caches")


def test_a_strip_has_no_cache_until_it_uses_one_and_then_keeps_it() -> None:
    strip = Strip([Segment("hello "), Segment("world", Style(bold=True))])
    slots = {name: Strip.__dict__[name]._slot for name in strip_caches.CACHES}
    made = [name for name, slot in slots.items() if _holds(slot, strip)]
    assert made == []
    cropped = strip.crop(0, 5)
    assert cropped.text == "hello" and strip.crop(0, 5) is cropped  # cached
    assert [name for name, slot in slots.items() if _holds(slot, strip)] == ["_crop_cache"]
    assert strip._crop_cache._maxsize == 16  # Textual's size for it
    left, right = strip.divide([6, 11])
    assert (left.text, right.text) == ("hello ", "world") and right.cell_length == 5
    assert strip.cell_length == 11 and strip.text == "hello world"


def _holds(slot: object, strip: Strip) -> bool:
    try:
        slot.__get__(strip, Strip)  # type: ignore[attr-defined]
    except AttributeError:
        return False
    return True
