"""Baseline: its tok/s with spread and age, the speedup with its 95% interval, and validity.

A stale baseline is impossible to miss: the panel turns to the `stale` colour and says why. A
verdict that flips flashes its border (`flash`).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import ProgressBar, Static

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import Verdict
from specmon.session.view import BaselineView
from specmon.ui.format import age, escape, fit_rows
from specmon.ui.widgets import quiet
from specmon.wording import DASH, counted, speedup_text, verdict_text

FLASH_S = 1.5  # how long the border flashes when the verdict flips
SHORT_BELOW = 5  # lines: fewer leave no room for the bars and a wrapped speedup line
BAR_AT_LEAST = 4  # cells: a narrower bar shows no proportion (and below 0 could not be drawn)
DECODE, SPEEDUP = figure("decode tok/s"), figure("speedup")
"""The catalogue's figures (`analysis.catalogue`): each side's decode tok/s, the speedup."""


class BaselinePanel(Vertical):
    """The denominator of every speedup, and whether it still applies."""

    view: var[BaselineView | None] = var(None)  # the watcher redraws what changed
    _flash_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        """Figures; a progress bar joins them while a baseline is being taken."""
        yield Static(id="baseline-body")

    def on_mount(self) -> None:
        """Title the panel."""
        self.border_title = "Baseline"

    def flash(self) -> None:
        """Flash the border (`-flash`) for FLASH_S: the verdict flipped. A flip meanwhile
        flashes it FLASH_S from then."""
        if self._flash_timer is not None:
            self._flash_timer.stop()
        self.add_class("-flash")
        self._flash_timer = self.set_timer(FLASH_S, lambda: self.remove_class("-flash"))

    def watch_view(self, view: BaselineView | None) -> None:
        """Render the baseline, its validity and any bench in progress."""
        if view is None:
            return
        # Mounted only while a bench runs: an idle ProgressBar keeps timers (15 Hz) going.
        bars = self.query(ProgressBar)
        if view.progress is not None:
            done, total, eta = view.progress.done, view.progress.total, view.progress.eta_s
            if bars:
                bars.first().update(total=total, progress=done)
            else:
                bar = ProgressBar(total, id="baseline-progress", show_eta=False)
                bar.progress = done
                self.mount(bar)
            quiet.subtitle(self, f"run {done}/{total}" + (f" · ETA {age(eta)}" if eta else ""))
        else:
            bars.remove()
            quiet.subtitle(self, "")
        self.set_class(view.validity is not None and not view.validity.valid, "stale")
        width = self.content_size.width or 36  # before the first layout, a 80x24 panel's
        height = self.content_size.height or 6
        body = self.query_one("#baseline-body", Static)
        short = height < SHORT_BELOW  # a line per figure: cut, not wrapped
        if body.has_class("-short") != short:
            body.set_class(short, "-short")
            body.refresh(layout=True)  # wrapped or not, its lines take another height
        # Wrapped (or cut, short) lines past the panel's last row end in "…" where they stop;
        # on a tall screen the panel takes its lines' height (`-tall`): none is past it.
        text = _body(view, width, height)
        if not self.screen.has_class("-tall"):
            text = fit_rows(text, width, height, wrap=not short)
        quiet.show(body, text)

    def on_resize(self) -> None:
        """The bars scale with the panel."""
        self.watch_view(self.view)


def bar(value: float, top: float, width: int) -> str:
    """A horizontal bar of `value` on a scale ending at `top`, in eighths of a cell."""
    eighths = round(8 * width * max(0.0, value) / top) if top > 0 else 0
    full, part = divmod(min(eighths, 8 * width), 8)
    return "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")


def _body(view: BaselineView, width: int, height: int) -> str:
    """The panel's lines, fitted to `height`."""
    if not view.present:
        if view.waiting and height < SHORT_BELOW:
            return (
                f"[bold $stale]waiting[/] for a restart\nwithout {escape(view.speculative_flags)}"
                "\nthen a baseline is taken"
            )
        if view.waiting:
            return (
                "[bold $stale]waiting[/] for the server to come back without speculation…\n"
                f"restart it without {escape(view.speculative_flags)}; the baseline is taken then"
            )
        if view.progress is not None:
            return "taking a baseline… (Esc cancels, nothing is saved)"
        if view.why_none is not None and height >= SHORT_BELOW:  # short: the key comes first
            return f"{escape(view.why_none)} — press [bold]b[/] to take one"
        return "no baseline — press [bold]b[/] to take one"
    validity = view.validity
    decode = DECODE.value_text
    spread = f"[{decode(view.tok_s_min, unit=False)}–{decode(view.tok_s_max, unit=False)}]"
    if validity is None:
        mark = "[dim]validity: once the server answers[/]"
    elif not validity.valid:
        mark = "[bold reverse $stale] ✗ STALE [/]"
    elif validity.unverified:
        mark = "[bold $stale]? unverified[/]"
    elif validity.conditions:
        mark = "[bold $stale]? conditions differ[/]"
    else:
        mark = "[bold $good]✓ valid[/]"
    head = f"[$baseline]#{view.snapshot_id}[/] [bold]{decode(view.tok_s)}[/]"
    # "now" pools the recent probes (the Decode panel's figure is the last one alone).
    pooled = counted(view.current_runs, "probe")
    span = width - 18 - len(pooled)
    # A short panel (60x15) or a narrow one (60x24) keeps the validity and the speedup (or why
    # it is stale) in view: no spread, no bars, no interval, a line each.
    comparison = view.comparison
    written = SPEEDUP.written(Measured(comparison=comparison)) if comparison else None
    verdict = verdict_text(comparison) if comparison else ""
    # The bars take two lines: with a speedup line that wraps, five lines would cut its verdict.
    wraps = len(f"speedup {written} {verdict}") > width
    roomy = height >= SHORT_BELOW + wraps and span >= BAR_AT_LEAST
    stale = validity is not None and not validity.valid
    dot = " ·" if stale else " · "  # the STALE mark's reverse video starts with its own space
    if roomy:
        lines = [f"{head} {escape(spread)}", f"{view.runs} runs · {age(view.age_s)} old{dot}{mark}"]
    else:
        # The speedup and its verdict first (`_headline`), then the validity, then the rest:
        # a panel of two lines (12 rows) or of 15 columns (40) keeps the headline in view.
        # (After the STALE badge's own trailing space, no " · ".)
        lines = [f"{mark}{'' if stale else ' · '}{age(view.age_s)} old"]
        lines.append(f"{head} · {view.runs} runs")
    if view.tok_s is not None and view.current_tok_s is not None and roomy:
        top = max(view.tok_s, view.current_tok_s)
        base, now = (decode(tok_s, unit=False) for tok_s in (view.tok_s, view.current_tok_s))
        lines.append(f"[$baseline]base {bar(view.tok_s, top, span):<{span}}[/] {base:>6}")
        lines.append(
            f"[$primary]now  {bar(view.current_tok_s, top, span):<{span}}[/] "
            f"{now:>6} [dim]{pooled}[/]"
        )
    gain = DASH
    if comparison is not None:
        # The catalogue's speedup text; a short or narrow panel keeps the value alone (its
        # interval's decimals), not the interval: a line each, cut, not wrapped.
        text = written if roomy else speedup_text(comparison.speedup, interval=False)
        gain = escape(text or DASH)
    # Without the bars, "now" leads the line: the speedup is the ratio of the two numbers shown.
    label = "speedup" if roomy else f"now {decode(view.current_tok_s, unit=False)}"
    if validity is not None and not validity.valid:
        reasons = [f"[$stale]✗ {escape(reason)}[/]" for reason in validity.reasons]
        if roomy:
            lines.extend([f"{label} [dim strike]{gain}[/]", *reasons])
        else:
            lines[1:1] = reasons
    elif comparison is not None:
        style = {Verdict.WINNING: "$good", Verdict.LOSING: "$bad"}.get(comparison.verdict, "")
        if roomy:
            lines.append(f"{label} [bold {style}]{gain}[/] {escape(verdict)}")
        else:
            # Short, its lines are cut (not wrapped): the headline is fitted to the width.
            fit = width if height < SHORT_BELOW else None
            lines[:0] = _headline(label, gain, f"bold {style}", verdict, fit)
    elif roomy:
        lines.append(f"{label} {DASH}")
    else:
        lines.insert(0, f"{label} {DASH}")
    if validity is not None:
        lines.extend(f"[$stale]?[/] {escape(what)}" for what in validity.unverified)
        lines.extend(f"[$stale]≠[/] {escape(what)}" for what in validity.conditions)
        lines.extend(f"[$stale]⚠[/] {escape(warning)}" for warning in validity.warnings)
    if view.origin:
        lines.append(f"[dim]{escape(view.url or '')} · {escape(view.origin)}[/]")
    return "\n".join(lines)


def _headline(label: str, gain: str, style: str, verdict: str, width: int | None) -> list[str]:
    """The speedup and its verdict in `width` cells (None: any, the lines wrap): `now 824.4
    +165.8% winning` on one line, without "now …" where that does not fit, and the verdict on a
    line of its own where the two still do not (`gain` is escaped, `label` and `verdict` plain)."""
    figure = f"[{style}]{gain}[/]"
    shown = len(gain.replace("\\[", "["))
    if width is None or len(label) + shown + len(verdict) + 2 <= width:
        return [f"{label} {figure} {escape(verdict)}"]
    if shown + len(verdict) + 1 <= width:
        return [f"{figure} {escape(verdict)}"]
    return [figure, escape(verdict)]
