"""Setters that touch a widget only when what it shows changes.

Textual re-renders a widget at every `update` and every title assignment, and lays the screen out
again after an `update`, even when nothing changed or the widget's size is fixed. The dashboard
hands every panel a new view each second, so these leave the unchanged parts alone: most seconds,
most panels do nothing.
"""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Static


def show(widget: Static, content: str) -> None:
    """`widget.update(content)`, unless it already shows exactly that; the screen is laid out
    again only when the widget's size follows its content (an `auto` width or height)."""
    if widget.content != content:
        styles = widget.styles
        widget.update(content, layout=styles.is_auto_width or styles.is_auto_height)


def title(widget: Widget, text: str) -> None:
    """Set the border title, unless it is already that."""
    if widget.border_title != widget.render_str(text).markup:
        widget.border_title = text


def subtitle(widget: Widget, text: str) -> None:
    """Set the border subtitle, unless it is already that."""
    if (widget.border_subtitle or "") != widget.render_str(text).markup:
        widget.border_subtitle = text


def tooltip(widget: Widget, text: str) -> None:
    """Set the tooltip, unless it is already that."""
    if widget.tooltip != text:
        widget.tooltip = text
