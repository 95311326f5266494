"""Run by tests/ui/test_tuning.py in a fresh process: a dashboard on Textual whose patched
internals are renamed (`renamed`) or on stock Textual (`stock`, with SPECMON_STOCK_TEXTUAL=1),
pressed through its screens; prints what it logged and which tunings were installed, as JSON."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from functools import wraps
from typing import Any


def rename_textuals_internals() -> None:
    """What a Textual release might do to each thing a tuning reaches into."""
    import textual._xterm_parser as xterm
    from textual._styles_cache import StylesCache
    from textual.app import App
    from textual.css.styles import Styles
    from textual.strip import Strip

    inner_outer = StylesCache.get_inner_outer.__wrapped__  # the lru_cache made a plain method
    StylesCache.get_inner_outer = lambda self, *args: inner_outer(self, *args)  # type: ignore[method-assign]
    Strip.__slots__ = (*Strip.__slots__, "_new_cache")  # type: ignore[misc]

    class Parser(xterm.XTermParser):
        def __init__(self, debug: bool = False) -> None:
            super().__init__(debug)
            self._timeout_at = self.__dict__.pop("_timeout_time")

    xterm.XTermParser = Parser  # type: ignore[misc]
    refresh = Styles.refresh
    Styles.refresh = wraps(refresh)(lambda self, **kwargs: refresh(self, **kwargs))  # type: ignore[method-assign]
    del Styles.refresh.__wrapped__  # its signature now (**kwargs)
    app_init = App.__init__

    def init(self: App[Any], *args: Any, **kwargs: Any) -> None:
        app_init(self, *args, **kwargs)

    App.__init__ = init  # type: ignore[method-assign]
    import specmon.ui.tuning.gc_deferral as gc_deferral
    import specmon.ui.tuning.malloc_trim as malloc_trim

    gc_deferral.LAST_GENERATIONAL = (3, 10)  # as on Python 3.14
    malloc_trim.sys = type("musl", (), {"platform": "linux-musl"})  # type: ignore[assignment]


async def run() -> dict[str, Any]:
    from textual.strip import Strip

    from specmon.config import MonitorConfig, Targets
    from specmon.session.server_session import dashboard_session
    from specmon.target import Target
    from specmon.ui import tuning
    from specmon.ui.app import SpecmonApp
    from specmon.ui.tuning.app_state import unhandled_exception

    url = "http://127.0.0.1:9"
    config = MonitorConfig(url=url, probe_tokens=16)
    session = dashboard_session(config, Targets(Target(url), None), None, wall=lambda: 0.0)
    app = SpecmonApp(session, start_workers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for key in ("t", "i", "escape", "c", "escape", "question_mark", "escape", "t"):
            await pilot.press(key)
            await pilot.pause()
        for _ in range(30):  # as many middle collections as make a full one due, and more
            gc.collect(1)
        app.heap.tidy()  # the housekeeping timer, which crashed on a changed Textual before
        app.heap.key()
        alive = app.is_running
    return {
        "installed": [name for name in tuning.TUNINGS if tuning.active(name)],
        "events": [event.text for event in app.session.live.events],
        "alive": alive,
        "exception": repr(unhandled_exception(app)),
        "strip_init": Strip.__init__.__module__,
    }


if __name__ == "__main__":
    if sys.argv[1] == "renamed":
        rename_textuals_internals()
    print(json.dumps(asyncio.run(run())))
