"""Makes a launched `python -m specmon.sim` the hostile server, for commands that launch their
servers themselves (`specmon ab`: tests/hostile/test_hostile_ab.py).

Python imports `sitecustomize` at start from its path: with this folder and tests/ on
PYTHONPATH and SPECMON_HOSTILE_CASE naming one of `hostile.server.CASES`, the simulator's
`SimServer` becomes `HostileServer` with that case applied, before `specmon.sim`'s main reads
the name. Without SPECMON_HOSTILE_CASE it does nothing.
"""

from __future__ import annotations

import os

CASE = os.environ.get("SPECMON_HOSTILE_CASE")

if CASE:
    from hostile.server import CASES, FAST, HostileServer

    import specmon.sim.server
    from specmon.sim import SimConfig

    case = next(c for c in CASES if c.name == CASE)

    class Launched(HostileServer):
        """The hostile server, `case` applied, as the simulator's main builds its server."""

        def __init__(self, config: SimConfig = FAST) -> None:
            super().__init__(config)
            case.apply(self)

    specmon.sim.server.SimServer = Launched  # type: ignore[misc]
