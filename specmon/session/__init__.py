"""The headless session: a watched target's wiring, snapshots and baseline decisions.

No Textual here (docs/design.md §2): the dashboard, `bench`, `check` and `snapshots` all go through
this package, so they take snapshots and judge baselines the same way.
"""
