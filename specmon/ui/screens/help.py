"""`?`: the keys, and what every number means (docs/metrics.md, shipped in the wheel)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

# The keys of the dashboard and of the comparison screen: tests/ui/test_help.py holds these
# tables to their BINDINGS, and `t`'s list of themes to the order `t` really goes through.
APP_KEYS = """\
# Keys

| key | does |
|---|---|
| `b` | take a fresh baseline (from `--baseline-url`, or from this server when it runs \
without speculation; otherwise the choices are explained); `Esc` cancels, nothing is saved |
| `s` | snapshot this configuration as a labelled run |
| `c` | compare every snapshot of this target with its matched baseline (keys below) |
| `p` | pause / resume the probe |
| `t` | next theme: `specmon-dark`, `specmon-high-contrast`, `specmon-light`, then Textual's \
`textual-dark`, `textual-light`, `nord`, `gruvbox` |
| `i` | sources, their age and last error, and why a value shows "—" |
| `?` | this help |
| `q` | quit |

"""
COMPARISON_KEYS = """\
## On the comparison screen (`c`)

| key | does |
|---|---|
| `e` | export the table as Markdown into the current directory (the path is shown) |
| `v` | export it as CSV |
| `j` | export it as JSON |
| `Esc`, `c`, `q` | close it |

"""


def metrics_doc() -> str:
    """docs/metrics.md: from the wheel, or from the checkout in a development install."""
    packaged = resources.files("specmon").joinpath("help", "metrics.md")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text("utf-8")


class HelpScreen(ModalScreen[None]):
    """Keys and metric definitions."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        """The help text, scrollable."""
        with VerticalScroll(id="help"):
            yield Markdown(APP_KEYS + COMPARISON_KEYS + metrics_doc())
