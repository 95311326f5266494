"""`?`: the keys, and what every number means (docs/metrics.md, shipped in the wheel).

The keys show at once; docs/metrics.md is read, parsed and rendered in a thread and joins them
a moment later (`RenderedPage`). Textual's Markdown widget, which built a widget for every block
and table cell on the event loop, took 400–700 ms to open this screen. The app keeps the screen
once built (`SpecmonApp.push_help`), so the page is rendered once per width.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from rich.theme import Theme
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specmon.ui.widgets.rendered_page import RenderedPage

if TYPE_CHECKING:
    from rich.console import RenderableType

# The keys of the dashboard and of the comparison screen: tests/ui/test_help.py holds these
# tables to their BINDINGS, and `t`'s list of themes to the order `t` really goes through.
KEYS = (
    ("b", "take a fresh baseline (from --baseline-url, or from this server when it runs without "
     "speculation; otherwise the choices are explained); Esc cancels, nothing is saved"),
    ("s", "snapshot this configuration as a labelled run"),
    ("Esc", "cancel a baseline or snapshot in progress (nothing is saved), or stop waiting"),
    ("c", "compare every snapshot of this target with its matched baseline (keys below)"),
    ("w", "what-if: tokens per step, cycle, decode tok/s and speedup at every draft length "
     "from the recent probes, the best one, the advisor's findings, and the server's own "
     "figures by load (PgDn PgUp Home End scroll it; Esc, w, q close it)"),
    ("p", "pause / resume the probe"),
    ("f", "freeze the screen (sampling and probing go on; the keys line says frozen); f again "
     "shows the present"),
    ("z", "zoom the sparklines: 5 min, 1 h, 24 h, all the history in the store, and back; "
     "restarts, config changes and drafting switches marked ┃ on their bottom row"),
    ("d", "dump the screen as SVG and text into the dumps folder (--dumps; the path is said in "
     "the events log)"),
    ("/", "show only the events holding a text (case aside; empty: all again)"),
    ("l", "the events log in full: every event kept (those `/` keeps), wrapped whole, "
     "scrollable; Esc, l, q close it"),
    ("t", "next theme, named in the events log: specmon-dark, specmon-high-contrast, "
     "specmon-light, then Textual's textual-dark, textual-light, nord, gruvbox"),
    ("i", 'sources, their age and last error, why a value shows "—", where acceptance came from'),
    ("?, h, F1", "this help"),
    ("q, F10, Ctrl-C", "quit"),
)  # fmt: skip
FLEET_KEYS = (
    ("↑, ↓", "choose a server (`--prometheus`: its last 15 minutes of speedup, tok/s and accept "
     "under the table)"),
    ("Enter", "open its dashboard, where every key of one server works (b, s, c, p, i …; `?` "
     "there lists them)"),
    ("Esc", "in a server's dashboard, with nothing to cancel: back to this table"),
    ("w", "what-if of the highlighted server (as `w` in its dashboard)"),
    ("o", "sort by the next column: worst first, server, tok/s, speedup, accept, cycle (the "
     "best first; a server without the figure last)"),
    ("/", "show only the servers whose name or address holds a text (empty: all again)"),
    ("f", "freeze the table (sampling goes on); f again shows the present"),
    ("d", "dump the screen as SVG and text into the dumps folder"),
    ("t", "next theme"),
    ("?, h, F1", "this help"),
    ("q, F10, Ctrl-C", "quit"),
)  # fmt: skip
"""The fleet table's keys: the single-server ones (b, s, c, p, i) act in a server's dashboard."""
COMPARISON_KEYS = (
    ("e", "on the comparison screen: export the table as Markdown into the current directory "
     "(the path is shown)"),
    ("v", "export it as CSV"),
    ("j", "export it as JSON"),
    ("Esc, c, q", "close it"),
)  # fmt: skip


READ_ONLY_KEYS = frozenset(("b", "s", "d", "e", "v", "j", "p"))
"""The keys a read-only dashboard turns off (they bench, save or write files, or pause the probe
every viewer shares): its `?` says so."""
_READ_ONLY_DOES = {"b": "benches", "p": "pauses the probe every viewer shares"}


def read_only(keys: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """`keys` as a read-only tab has them: those that bench, save or write files marked off."""
    return tuple(
        (
            key,
            f"off in this read-only dashboard (it {_READ_ONLY_DOES.get(key, 'writes')}): {does}",
        )
        if key in READ_ONLY_KEYS
        else (key, does)
        for key, does in keys
    )


def metrics_doc() -> str:
    """docs/metrics.md: from the wheel, or from the checkout in a development install."""
    packaged = resources.files("specmon").joinpath("help", "metrics.md")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text("utf-8")


KEYS_AND_COMPARISON = (*KEYS, *COMPARISON_KEYS)
"""The dashboard's `?`: its keys and its comparison screen's."""


def keys_table(keys: tuple[tuple[str, str], ...] = KEYS_AND_COMPARISON) -> Table:
    """The keys and what each does."""
    table = Table(
        title="Keys",
        title_justify="left",
        title_style="bold",
        box=None,
        padding=(0, 2, 0, 0),
        expand=True,
    )
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("does", ratio=1)
    for key, does in keys:
        table.add_row(key, does)
    return table


# Rich's code styles are on black: on a light theme's surface that is a black patch.
PAGE_STYLES = Theme({"markdown.code": "bold cyan", "markdown.code_block": "cyan"})


def metrics_page() -> RenderableType:
    """docs/metrics.md as Rich Markdown (called in RenderedPage's thread)."""
    # Imported here: markdown-it and Pygments would add ~45 ms to the dashboard's start.
    from rich.markdown import Markdown

    try:
        return Markdown(metrics_doc())
    except OSError as exc:
        return Text(f"docs/metrics.md cannot be read: {exc.strerror}")


class HelpScreen(ModalScreen[None]):
    """Keys and metric definitions."""

    BINDINGS = [Binding("escape,question_mark,q,h,f1", "dismiss", "Close")]

    def __init__(self, keys: tuple[tuple[str, str], ...] = KEYS_AND_COMPARISON) -> None:
        """Args:
        keys: The keys of the screen it is opened from (the dashboard's, the fleet table's).
        """
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        """The keys, then what every number means; scrollable."""
        with VerticalScroll(id="help") as page:
            page.border_subtitle = "↑↓ PgUp PgDn: scroll · Esc: close"  # in view at any height
            yield Static(keys_table(self.keys), id="help-keys")
            yield RenderedPage(
                metrics_page, "loading what every number means…", theme=PAGE_STYLES, id="help-page"
            )

    def on_screen_suspend(self) -> None:
        """The next `?` opens at the keys: scrolled back as it closes, so that the frame that
        shows it again is already at the top (scrolling on resume drew it twice)."""
        self.query_one("#help", VerticalScroll).scroll_home(animate=False, immediate=True)
