"""The headless session: a watched target's wiring, snapshots and baseline decisions.

No Textual here (docs/design.md §2): the dashboard, `bench`, `check` and `snapshots` all go through
this package, so they take snapshots and judge baselines the same way.

The public API a surface uses (`__all__`): `ServerSession` (its View, its properties and the
requests its keys make), `Fleet`, the View and its parts, and the feeds. `LiveState`, the
tracker, the window and the baseline state are the session's own (the import contract
"surfaces-through-the-session" in .importlinter keeps the dashboard and the exporter off them).
The names are loaded on first use, so that importing one module of the package loads no other.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specmon.session.feed import Feed, FeedSink, LocalFeed
    from specmon.session.fleet import Fleet
    from specmon.session.server_session import ServerSession, dashboard_session
    from specmon.session.view import (
        RECENT_PROBES,
        BaselineView,
        BenchView,
        CategoryView,
        DecodeView,
        DraftingView,
        Event,
        FigureView,
        GpuView,
        IdentityView,
        ServerView,
        SourceView,
        SpecView,
        View,
    )

_WHERE = {
    "Feed": "feed",
    "FeedSink": "feed",
    "LocalFeed": "feed",
    "Fleet": "fleet",
    "ServerSession": "server_session",
    "dashboard_session": "server_session",
    "RECENT_PROBES": "view",
    "BaselineView": "view",
    "BenchView": "view",
    "CategoryView": "view",
    "DecodeView": "view",
    "DraftingView": "view",
    "Event": "view",
    "FigureView": "view",
    "GpuView": "view",
    "IdentityView": "view",
    "ServerView": "view",
    "SourceView": "view",
    "SpecView": "view",
    "View": "view",
}

__all__ = [
    "RECENT_PROBES",
    "BaselineView",
    "BenchView",
    "CategoryView",
    "DecodeView",
    "DraftingView",
    "Event",
    "Feed",
    "FeedSink",
    "FigureView",
    "Fleet",
    "GpuView",
    "IdentityView",
    "LocalFeed",
    "ServerSession",
    "ServerView",
    "SourceView",
    "SpecView",
    "View",
    "dashboard_session",
]


def __getattr__(name: str) -> object:
    """A public name, from the module that defines it (imported on first use)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
