"""The store's latest A/B for a server: the one lookup the `w` screen and `check` share."""

from __future__ import annotations

from specmon.analysis.ab_runs import StoredAb, stored_ab
from specmon.analysis.validity import fingerprint
from specmon.model import ServerInfo
from specmon.storage.store import Store


def lookup_ab(store: Store, info: ServerInfo, *, max_age_s: float) -> StoredAb | None:
    """The newest stored `ab` of this server's configuration (its flags apart from speculation,
    as baselines match, and its speculative configuration), judged as `ab` judged it, each
    round's pair within `max_age_s`; None when the store holds none.

    Raises:
        StoreError: The store could not be read.
    """
    runs = store.latest_ab(fingerprint(info.args))
    return stored_ab(runs, info.speculative, max_age_s=max_age_s)
