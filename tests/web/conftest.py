"""`specmon web` in a real browser: Debian's Chromium driven by Playwright, against the simulator.

Chromium is the system's (`apt-get install chromium chromium-driver`, which `.ci/run` does);
Playwright's own browser download is never used. Without /usr/bin/chromium these tests skip,
saying why; with SPECMON_BROWSER_REQUIRED=1 (CI sets it) they fail instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from web_helpers import CHROMIUM, Web, serving

from specmon.sim import SimConfig, SimThread


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Chromium with a fresh profile."""
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing: apt-get install chromium chromium-driver"
        if os.environ.get("SPECMON_BROWSER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
            viewport={"width": 1400, "height": 1000},
        )
        yield context
        context.close()


@pytest.fixture
def sims() -> Iterator[tuple[SimThread, SimThread]]:
    """The demo's pair: a speculative server and its plain twin, the baseline."""
    config = SimConfig()
    with SimThread(config) as spec, SimThread(replace(config, speculative_algorithm=None)) as base:
        yield spec, base


@pytest.fixture
def web(sims: tuple[SimThread, SimThread], tmp_path: Path) -> Iterator[Web]:
    """`specmon web` on a free port, watching the speculative simulator."""
    with _serving(sims, tmp_path / "db") as served:
        yield served


@pytest.fixture
def read_only_web(sims: tuple[SimThread, SimThread], tmp_path: Path) -> Iterator[Web]:
    """`specmon web --readonly`, as it runs bound off loopback."""
    with _serving(sims, tmp_path / "db", "--readonly") as served:
        yield served


@contextmanager
def _serving(sims: tuple[SimThread, SimThread], db: Path, *options: str) -> Iterator[Web]:
    spec, base = sims
    watching = ("--url", spec.url, "--baseline-url", base.url, "--probe-tokens", "48")
    with serving(db, *watching, "--baseline-runs", "2", *options) as served:
        yield served
