"""Tests of a tuning of Textual's internals (specmon/ui/tuning) run where it is installed: not
under SPECMON_STOCK_TEXTUAL=1, nor where it stood down."""

from __future__ import annotations

import pytest

from specmon.ui import tuning


def needs(*names: str) -> pytest.MarkDecorator:
    """Skip unless these tunings are installed (as a dashboard installs them)."""
    tuning.install()
    missing = [name for name in names if not tuning.active(name)]
    return pytest.mark.skipif(bool(missing), reason=f"tuning not installed: {', '.join(missing)}")
