"""The keys line: every key the dashboard shows, as one line of text drawn once a width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from specmon.ui.fitting import left_out

# Which keys go first when the line is too narrow for every key with its word (thirteen take 122
# columns): a key shown always has its word (a bare `s  f  z  d` said nothing), and `? help` lists
# every key. Help and quit stay the longest; a replay's own keys (`specmon replay`) longer than
# the dashboard's.
HIDDEN_FIRST = ("next_theme", "zoom", "filter_events", "dump", "freeze", "toggle_probe",
                "diagnostics", "snapshot", "compare", "whatif", "baseline", "faster",
                "seek_back", "pause_replay", "help", "quit")  # fmt: skip


class Key(NamedTuple):
    """A key as the line shows it, and the action it runs."""

    key: str
    word: str
    action: str

    def width(self) -> int:
        """Cells taken: ` k word `."""
        return len(self.key) + 2 + len(self.word) + 1


def shown(keys: Sequence[Key], width: int) -> frozenset[str]:
    """The actions whose key and word fit in `width` cells (all while it is unknown)."""

    def fits(hidden: frozenset[str]) -> bool:
        return not width or sum(key.width() for key in keys if key.action not in hidden) <= width

    return frozenset(key.action for key in keys) - left_out(HIDDEN_FIRST, fits)


class KeysLine(Static):
    """` b baseline  s snapshot …  ? help  q quit`, as many keys as fit; a click on a key runs
    its action.

    Textual's `Footer` made a widget of each key, rebuilt them at every screen change (`i`, `?`,
    `c` and back: 20–50 ms of restyling and a second repaint of the whole dashboard after each)
    and leaked the old ones (Textualize/textual#6666). The dashboard's keys never change; how
    many of them are listed depends on the width.
    """

    _keys: tuple[Key, ...] = ()
    _shown: frozenset[str] | None = None

    def __init__(
        self, *, left_out: frozenset[str] = frozenset(), note: str = "", id: str | None = None
    ) -> None:
        """Args:
        left_out: Actions whose keys are off, not listed.
        note: Said after the keys (why some are off).
        id: The widget's id.
        """
        super().__init__(id=id)
        self.left_out = left_out
        self.note = note

    def on_mount(self) -> None:
        """Collect the app's shown bindings and write them."""
        self.auto_links = False
        self._keys = tuple(
            Key(self.app.get_key_display(binding), binding.description, binding.action)
            for binding in self.app.BINDINGS
            if not isinstance(binding, tuple)
            and binding.show
            and binding.action not in self.left_out
        )
        self._write()

    def set_note(self, note: str) -> None:
        """Say `note` after the keys from now on (the dashboard frozen, or no longer)."""
        self.note = note
        self._shown = None
        self._write()

    def on_resize(self) -> None:
        """Keys in or out as the width allows."""
        self._write()

    def _write(self) -> None:
        """The keys in the footer's colours (not as underlined links), as many as fit."""
        note = f" {self.note} " if self.note else ""
        keys = shown(self._keys, max(self.size.width - len(note), 1) if self.size.width else 0)
        if keys == self._shown:
            return
        self._shown = keys
        parts = [
            f"[@click=app.{key.action}]"
            f"[b $footer-key-foreground on $footer-key-background] {escape(key.key)} [/]"
            f"[$footer-description-foreground]{escape(key.word)} [/][/]"
            for key in self._keys
            if key.action in keys
        ]
        if note:
            parts.append(f"[b $warning]{escape(note)}[/]")
        self.update(Content.from_markup("".join(parts)))
