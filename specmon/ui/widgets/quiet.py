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
    again only when the widget's size follows its content (an `auto` width or height) and the
    new content asks for another size.

    A layout walks the whole screen and repaints what moved: the top line (`auto` height)
    going from "up 45s" to "up 46s" cost 2.5 ms a second that way, over half of an idle
    dashboard's CPU while its server is under 90 s old (its uptime then counts seconds).
    """
    if widget.content == content:
        return
    styles = widget.styles
    if not (styles.is_auto_width or styles.is_auto_height):
        widget.update(content, layout=False)
        return
    before = _wanted_size(widget)
    widget.update(content, layout=False)
    if before is None or _wanted_size(widget) != before:
        widget.refresh(layout=True)


def _wanted_size(widget: Static) -> tuple[int, int] | None:
    """The content size a layout would give the widget, its other sizes as they are (`auto`
    dimensions from its content, the others as laid out); None before its first layout."""
    width = widget.content_size.width
    if not width:
        return None
    styles, container = widget.styles, widget.container_size
    if styles.is_auto_width:
        width = widget.get_content_width(container, container)
    if styles.is_auto_height:
        return width, widget.get_content_height(container, container, width)
    return width, widget.content_size.height


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
