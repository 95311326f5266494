"""`specmon web` in Chromium: live numbers, `b` takes the baseline every tab sees, and two tabs
make one probe stream at the server (tabs read the hub; none of them talks to the server)."""

from __future__ import annotations

import itertools
from pathlib import Path

import psutil
from web_helpers import Web

from specmon.sim import SimThread
from specmon.sim.record import EmittedRequest

LIVE = r"Decode (\d+\.\d) tok/s \(probe\)"
BASELINE = r"#(\d+) (\d+\.\d) tok/s \[[^\]]+\]"


def _pooled(records: list[EmittedRequest]) -> float:
    """The simulator's own pooled decode speed of some requests."""
    tokens = sum(r.chunk_completion_tokens[-1] - r.chunk_completion_tokens[0] for r in records)
    seconds = sum(r.chunk_send_mono[-1] - r.chunk_send_mono[0] for r in records)
    return tokens / seconds


def _probes(server: SimThread) -> list[EmittedRequest]:
    return [r for r in server.server.emitted if r.endpoint == "/generate"]


def test_a_tab_shows_live_numbers_and_b_takes_the_baseline(
    browser: object, web: Web, sims: tuple[SimThread, SimThread]
) -> None:
    spec, base = sims
    tab = web.tab(browser)
    decode = float(tab.wait_for(LIVE).group(1))
    spec_truth = _pooled(_probes(spec))
    # A live figure of these probes (its accuracy is tested in tests/ui/test_live_servers.py;
    # here the window it covers and the server's record differ by a probe or two).
    assert abs(decode / spec_truth - 1) < 0.15
    tab.wait_for(r"no snapshot of http\S+ \(--baseline-url\) in the store")
    tab.press("b")
    shown = tab.wait_for(BASELINE)
    tab.wait_for(r"speedup [+-]\d+\.\d% \[")
    tab.wait_for(r"the baseline server")
    truth = _pooled(base.server.emitted[-2:])  # the two timed runs after the warm-up
    assert abs(float(shown.group(2)) / truth - 1) < 0.03  # as tests/ui/test_live_servers.py


def test_two_tabs_make_one_probe_stream_and_share_the_baseline(
    browser: object, web: Web, sims: tuple[SimThread, SimThread]
) -> None:
    spec, _ = sims
    first = web.tab(browser)
    first.wait_for(LIVE)
    second = web.tab(browser)
    second.wait_for(LIVE)
    shared_from = len(_probes(spec))
    tabs = [
        p
        for p in psutil.Process(web.process.pid).children(recursive=True)
        if "specmon.cli.web_tab" in p.cmdline()
    ]
    assert len(tabs) == 2  # textual-serve runs one dashboard per tab

    first.press("b")  # the baseline one tab takes shows in both
    number = first.wait_for(BASELINE).group(0)
    second.wait_for(number.replace("[", r"\[").replace("]", r"\]").replace(".", r"\."))
    # The probe goes on meanwhile (a bench on the baseline server does not pause it).
    first.wait_until(lambda: len(_probes(spec)) >= shared_from + 3)
    window = _probes(spec)[shared_from:]
    for earlier, later in itertools.pairwise(window):
        # One stream: each probe starts after the one before it ended, never beside it.
        assert earlier.finished_mono is not None and later.arrival_mono > earlier.finished_mono
    port = int(spec.url.rsplit(":", 1)[1])

    def talks_to_the_server(process: psutil.Process) -> bool:
        return any(c.raddr and c.raddr.port == port for c in process.net_connections("tcp"))

    assert talks_to_the_server(psutil.Process(web.process.pid))
    assert not any(talks_to_the_server(tab) for tab in tabs)


def test_a_fifth_tab_gets_the_limit_page(browser: object, web: Web) -> None:
    tabs = [web.tab(browser) for _ in range(4)]  # --max-tabs' default
    for tab in tabs:
        tab.wait_for(LIVE)
    fifth = web.tab(browser)
    fifth.page.wait_for_selector("text=tab limit reached (4 open)")
    assert "Close a tab on it, then reload this one" in fifth.page.content()
    tabs[0].page.close()  # its dashboard stops, and a reload finds room
    fifth.wait_until(lambda: fifth.page.reload().status == 200)
    fifth.wait_for(LIVE)


def test_read_only_keys_are_off_in_the_browser(
    browser: object, read_only_web: Web, sims: tuple[SimThread, SimThread]
) -> None:
    _, base = sims
    tab = read_only_web.tab(browser)
    tab.wait_for(LIVE)
    tab.wait_for(r"q quit\s+read-only")  # the keys line says so, b and s left out
    assert " b baseline" not in tab.screen()
    tab.press("b")
    tab.wait_for(r"read-only: b is off in this dashboard")
    tab.press("c")
    tab.wait_for(r"no snapshots of this target yet: read-only: b and s are off in this dashboard")
    tab.press("e")
    tab.wait_for(r"read-only: exports are off in this dashboard")
    assert not base.server.emitted  # no bench reached the baseline server
    assert not list(Path.cwd().glob("specmon-comparison-*"))
