"""The keys line: Textual's `Footer`, without the leak it has at every screen change."""

from __future__ import annotations

from textual.widgets import Footer


class KeysFooter(Footer):
    """Textual's footer, pruning the keys it leaks (Textualize/textual#6666, Textual 8.2).

    The footer rebuilds its keys at every screen change (`i`, `?`, `c` and back). Each key is
    data-bound to the footer's `compact`, which stores the key among the footer's watchers; a
    removed key leaves that list only when `compact` changes, which never happens here. So every
    screen change kept the old keys and their styles alive (about 15 widgets): a long session
    grew without bound. After each rebuild the watchers of keys no longer attached are dropped.
    """

    async def recompose(self) -> None:
        """Rebuild the keys, then forget the old ones."""
        await super().recompose()
        # Textual keeps global watchers in this attribute (reactive.py `_watch`).
        watchers = getattr(self, "__watchers", {}).get("compact")
        if watchers:
            watchers[:] = [(node, callback) for node, callback in watchers if node.is_attached]
