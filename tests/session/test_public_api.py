"""`specmon.session`'s public API (issue 37): every name of `__all__` is there, and importing one
module of the package loads no other (the names load on first use)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import specmon.session


def test_every_public_name_is_there() -> None:
    for name in specmon.session.__all__:
        assert getattr(specmon.session, name) is not None, name
    with pytest.raises(AttributeError):
        specmon.session.LiveState  # noqa: B018 — the state is the session's own


def test_importing_the_view_loads_no_session() -> None:
    code = "import sys, specmon.session.view; print('specmon.session.live' in sys.modules)"
    run = [sys.executable, "-c", code]
    loaded = subprocess.run(run, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"
