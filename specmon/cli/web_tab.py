"""One browser tab's dashboard under `specmon web`.

textual-serve runs `python -m specmon.cli.web_tab SOCKET [--readonly]` for each browser
connection; the dashboard it opens reads the hub at SOCKET (`HubFeed`) instead of sampling the
server itself, with the keys that bench, save or write files off when `--readonly`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from specmon.cli.crash import run_dashboard
from specmon.cli.monitor import open_store_or_warn
from specmon.errors import SpecmonError
from specmon.session.hub import HubFeed
from specmon.session.server_session import ServerSession


def main(argv: Sequence[str] | None = None) -> int:
    """Open the dashboard on the hub whose socket is the one argument."""
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) not in (1, 2) or args[1:] not in ([], ["--readonly"]):
        print(
            "usage: python -m specmon.cli.web_tab SOCKET [--readonly] (specmon web runs it)",
            file=sys.stderr,
        )
        return 2
    try:
        feed, config = HubFeed.connect(args[0])
    except SpecmonError as exc:
        print(f"specmon: error: {exc}", file=sys.stderr)
        return 1
    from specmon.ui.app import SpecmonApp  # after the hub answered: Textual takes ~0.3 s

    # The store is read here (the baseline lookup, `c`); benches are saved by the hub.
    store = open_store_or_warn(config.db)
    try:
        session = ServerSession.of_config(config, feed, store)  # no history: the hub samples
        return run_dashboard(SpecmonApp(session, read_only=args[1:] == ["--readonly"]))
    finally:
        if store is not None:
            store.close()


if __name__ == "__main__":
    sys.exit(main())
