"""`?`: the keys, and what every number means (docs/metrics.md, shipped in the wheel)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

KEYS = """\
# Keys

| key | does |
|---|---|
| `b` | take a fresh baseline (from `--baseline-url`, or from this server when it runs \
without speculation; otherwise the choices are explained); `Esc` cancels, nothing is saved |
| `s` | snapshot this configuration as a labelled run |
| `c` | compare every snapshot of this target; `e` there exports it |
| `p` | pause / resume the probe |
| `t` | next theme |
| `i` | sources, their age and last error, and why a value shows "—" |
| `?` | this help |
| `q` | quit |

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
            yield Markdown(KEYS + metrics_doc())
