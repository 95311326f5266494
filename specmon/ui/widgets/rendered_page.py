"""A long, fixed page (the help's docs/metrics.md), rendered in a thread once per width."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual import events, work
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget


class RenderedPage(Widget):
    """Lines rendered off the event loop, then shown as they are.

    A `Static` holding the same Rich Markdown is rendered again each time Textual measures its
    height — at every layout — and on the event loop: 50–70 ms for docs/metrics.md, during which
    no key is handled. Here the page is built and rendered in a thread, once per width; its
    height is the number of lines, so a layout costs nothing.

    The page is kept as plain segment lines and nothing else: a Strip per line (with the seven
    caches each Strip makes, and the styled and cropped Strips each caches after a frame) and the
    parsed Markdown were 28,000 objects that every full garbage collection walked while the
    dashboard ran (specmon/ui/tuning/gc_deferral.py). The page is built again for a new width,
    in the thread.
    """

    DEFAULT_CSS = """
    RenderedPage {
        height: auto;
    }
    """

    def __init__(
        self,
        build: Callable[[], RenderableType],
        placeholder: str,
        *,
        theme: Theme | None = None,
        id: str | None = None,
    ) -> None:
        """Show `placeholder` until `build()`'s renderable is rendered.

        Args:
            build: Makes the page (called once, in a thread: it may read files and parse).
            placeholder: What shows meanwhile.
            theme: Rich styles by name that the page's renderables look up.
            id: The widget's id.
        """
        super().__init__(id=id)
        self._build = build
        self._theme = theme
        self._lines = [[Segment(placeholder, Style(dim=True))]]
        self._width = 0

    def on_resize(self, event: events.Resize) -> None:
        """Render for the new width (only the width changes the lines)."""
        width = self.content_size.width
        if width and width != self._width:
            self._width = width
            self._render_page(width)

    @work(thread=True, exclusive=True, group="rendered-page", exit_on_error=False)
    def _render_page(self, width: int) -> None:
        console = Console(width=width, color_system="truecolor", theme=self._theme)
        lines = console.render_lines(self._build(), console.options, pad=False)
        self.app.call_from_thread(self._show, width, lines)

    def _show(self, width: int, lines: list[list[Segment]]) -> None:
        if width == self._width:  # else a later render for the current width follows
            self._lines = lines
            self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The lines rendered (one before: the placeholder)."""
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        """One rendered line on the widget's background."""
        width, style = self.content_size.width, self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, style)
        return Strip(self._lines[y]).apply_style(style).crop_extend(0, width, style)
