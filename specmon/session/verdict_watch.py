"""The verdict's changes: a server's comparison that goes from winning to losing or within
noise (or back) is an event of its session, said in its events log as a restart is, so every
surface of the session (the dashboard, a fleet's rows, the exporter, a replay) has it."""

from __future__ import annotations

from specmon.analysis.comparison import Verdict
from specmon.session.view import View


class VerdictWatch:
    """The verdict last seen in the session's Views, and what changed since."""

    def __init__(self) -> None:
        self.last: Verdict | None = None
        """The verdict of the latest View that had one (a gap without one does not count)."""

    def see(self, view: View) -> str | None:
        """What changed when `view`'s verdict is another of winning / losing / within noise
        than the last one seen, else None. A first probe's verdict rests on an assumed spread:
        none is taken as a change, from or to."""
        verdict = view.spec.verdict if view.baseline.current_runs > 1 else None
        if verdict is None:
            return None
        before, self.last = self.last, verdict
        if before is None or before == verdict:
            return None
        return f"verdict: {before.value} → {verdict.value}"
