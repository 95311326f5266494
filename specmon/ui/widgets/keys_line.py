"""The keys line: every key the dashboard shows, as one line of text drawn once."""

from __future__ import annotations

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static


class KeysLine(Static):
    """` b baseline  s snapshot …`; a click on a key runs its action.

    Textual's `Footer` made a widget of each key, rebuilt them at every screen change (`i`, `?`,
    `c` and back: 20–50 ms of restyling and a second repaint of the whole dashboard after each)
    and leaked the old ones (Textualize/textual#6666). The dashboard's keys never change.
    """

    def on_mount(self) -> None:
        """Write the app's shown bindings, in the footer's colours (not as underlined links)."""
        self.auto_links = False
        parts = []
        for binding in self.app.BINDINGS:
            if isinstance(binding, tuple) or not binding.show:
                continue
            key, description = self.app.get_key_display(binding), binding.description
            parts.append(
                f"[@click=app.{binding.action}]"
                f"[b $footer-key-foreground on $footer-key-background] {escape(key)} [/]"
                f"[$footer-description-foreground]{escape(description)} [/][/]"
            )
        self.update(Content.from_markup("".join(parts)))
