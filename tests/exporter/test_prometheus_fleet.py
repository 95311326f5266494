"""`specmon --prometheus`: the Prometheus API read as hostile, and rows from its series.

The real Prometheus end to end is test_prometheus_fleet_real.py.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from specmon.analysis.comparison import Verdict
from specmon.session.fleet_row import Rank
from specmon.session.prometheus_rows import FAMILIES, LABELLED, NOT_SERVED, prometheus_rows
from specmon.sources.prometheus_api import PrometheusApi, PrometheusError

A, B = "http://a:8000", "http://b:8000"


def _vector(samples: list[tuple[dict[str, Any], str]]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [1700000000.5, v]} for m, v in samples],
        },
    }


SERIES: dict[str, list[tuple[dict[str, str], str]]] = {
    "specmon_target_up": [({"target": A}, "1"), ({"target": B}, "1")],
    "specmon_probe_success": [({"target": A}, "1"), ({"target": B}, "1")],
    "specmon_probe_decode_tokens_per_second": [({"target": A}, "150"), ({"target": B}, "NaN")],
    "specmon_probe_accept_length": [({"target": A}, "3"), ({"target": B}, "+Inf")],
    "specmon_probe_cycle_seconds": [({"target": A}, "0.02")],
    "specmon_speedup_ratio": [({"target": A}, "0.5"), ({"target": B}, "-0.3")],
    "specmon_speedup_ratio_low": [({"target": A}, "0.4"), ({"target": B}, "-0.4")],
    "specmon_speedup_ratio_high": [({"target": A}, "0.6"), ({"target": B}, "-0.2")],
    "specmon_target_info": [
        (
            {"target": A, "name": "a\x1b]0;x\x07", "backend": "sglang", "algorithm": "EAGLE3"},
            "1",
        ),
        ({"target": B, "backend": "vllm", "version": "0.32", "algorithm": "eagle"}, "1"),
    ],
    "specmon_baseline_state": [
        ({"target": A, "state": "valid"}, "1"),
        ({"target": A, "state": "stale"}, "0"),
        ({"target": B, "state": "valid"}, "1"),
    ],
}


def _api(handler: Any) -> PrometheusApi:
    return PrometheusApi(
        httpx.AsyncClient(base_url="http://prom:9090", transport=httpx.MockTransport(handler))
    )


def _families(request: httpx.Request) -> tuple[str, ...]:
    """The family of `max by (…) (family)`, or those of `max by (__name__, …)
    ({__name__=~"a|b"})`."""
    query = request.url.params["query"]
    if '__name__=~"' in query:
        return tuple(query.partition('__name__=~"')[2].partition('"')[0].split("|"))
    return (query.rpartition("(")[2].rstrip(")"),)


def _serving(request: httpx.Request) -> httpx.Response:
    """Each family's series; those of a query of several families named (`__name__`)."""
    families = _families(request)
    named = len(families) > 1
    return httpx.Response(
        200,
        json=_vector(
            [
                ({**labels, "__name__": family} if named else labels, value)
                for family in families
                for labels, value in SERIES.get(family, [])
            ]
        ),
    )


async def test_rows_from_one_query_for_the_gauges_and_one_per_labelled_family() -> None:
    queries: list[tuple[str, ...]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        queries.append(_families(request))
        return _serving(request)

    snapshot = await _api(handler).instant(FAMILIES, LABELLED)
    # Not one per server, nor one per gauge.
    assert sorted(queries) == sorted([FAMILIES, *((family,) for family in LABELLED)])
    rows = {r.url: r for r in prometheus_rows(snapshot)}
    a, b = rows[A], rows[B]
    assert (a.speedup, a.verdict, a.baseline, a.baseline_valid) == (0.5, Verdict.WINNING, "✓", True)
    assert a.cycle_ms == pytest.approx(20.0) and a.decode_tok_s == 150 and a.accept_length == 3
    assert a.label == "a\\x1b]0;x\\x07" and a.title == "SGLang ?"
    assert (b.verdict, b.rank, b.title) == (Verdict.LOSING, Rank.LOSING, "vLLM 0.32")
    # NaN and +Inf are not known, not 0; what the exporter does not serve is said.
    assert b.decode_tok_s is None and b.accept_length is None and b.gpu is None
    assert b.gpu_detail == NOT_SERVED
    # A target Prometheus no longer holds stays, said stale.
    gone = prometheus_rows(snapshot, seen=[A, B, "http://c:8000"])
    assert [r.rank for r in gone if r.url == "http://c:8000"] == [Rank.STALE]


async def test_a_gauge_sample_of_no_family_asked_is_left_out() -> None:
    """The gauges' one query: a sample without a family's name, or of a family not asked,
    fills no column; a label that is not a string is no label."""
    stray: list[tuple[dict[str, Any], str]] = [
        ({"target": A, "__name__": "specmon_target_up", "odd": ["x"]}, "1"),
        ({"target": B}, "1"),
        ({"target": B, "__name__": "node_load1"}, "7"),
    ]
    snapshot = await _api(lambda request: httpx.Response(200, json=_vector(stray))).instant(
        ("specmon_target_up", "specmon_probe_success")
    )
    assert snapshot.families == {"specmon_target_up": {A: 1.0}, "specmon_probe_success": {}}


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (httpx.Response(200, text="<html>hello</html>"), "not JSON"),
        (httpx.Response(200, json={"status": "error", "error": "bad\x1b[2J"}), "bad\\x1b[2J"),
        (httpx.Response(200, json={"status": "success", "data": {}}), "no data.result"),
        (httpx.Response(200, text="[" * 5000 + "]" * 5000), "not JSON"),
        (httpx.Response(502, text="bad gateway"), "HTTP 502"),
    ],
)
async def test_a_reply_that_is_not_prometheus_is_one_line(reply: httpx.Response, said: str) -> None:
    with pytest.raises(PrometheusError) as caught:
        await _api(lambda request: reply).query("specmon_target_up")
    assert said in str(caught.value) and "\n" not in str(caught.value)


async def test_an_unreachable_prometheus_is_one_line() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(PrometheusError, match="Prometheus at http://prom:9090"):
        await _api(refuse).query("specmon_target_up")


async def test_a_huge_reply_is_refused_unread() -> None:
    huge = json.dumps(_vector([({"target": "x" * 100}, "1")] * 100_000))
    with pytest.raises(PrometheusError, match="larger than"):
        await _api(lambda request: httpx.Response(200, text=huge)).query("specmon_target_up")


async def test_history_is_the_finite_points_of_one_target() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v1/query_range"
        assert request.url.params["query"] == (
            'max by (__name__) ({__name__=~"specmon_speedup_ratio",target="http://a:8000"})'
        )
        values = [[10, "0.1"], [11, "NaN"], [12, "0.3"], ["x", "1"]]
        series = {"metric": {"__name__": "specmon_speedup_ratio"}, "values": values}
        body = {"status": "success", "data": {"result": [series]}}
        return httpx.Response(200, json=body)

    points = await _api(handler).histories(("specmon_speedup_ratio",), A, 0, 20, 1)
    assert points == {"specmon_speedup_ratio": [(10.0, 0.1), (12.0, 0.3)]}


def test_prometheus_takes_no_server_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    from specmon.cli import main

    assert main(["--prometheus", "http://prom:9090", "--url", "http://a:8000"]) != 0
    assert "--prometheus reads the servers from Prometheus" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (httpx.Response(200, text="<html>grafana</html>"), "not a Prometheus reply"),
        (httpx.Response(200, json=_vector([])), "no specmon series"),
    ],
)
async def test_the_table_says_what_is_wrong_in_one_line(reply: httpx.Response, said: str) -> None:
    import asyncio

    from specmon.ui.prometheus_fleet_app import PrometheusFleetApp

    client = httpx.AsyncClient(
        base_url="http://prom:9090", transport=httpx.MockTransport(lambda request: reply)
    )
    app = PrometheusFleetApp("http://prom:9090", 0.05, client=client)
    async with app.run_test(size=(120, 30)) as pilot:
        deadline = asyncio.get_running_loop().time() + 60
        while app.readings < 2:
            assert asyncio.get_running_loop().time() < deadline
            await pilot.pause(0.05)
        assert app.error is not None and said in app.error and "\n" not in app.error
        assert app.rows == ()
        assert len(app._notifications) == 1  # said once, not at every reading
        # The keys line offers only what this app serves: no dashboard keys (w, f, d, t, ?).
        await pilot.pause()
        keys = str(app.screen.query_one("#fleet-keys").render())
        assert keys == "Enter open · o sort · / filter · q quit"


def test_enter_opens_the_servers_dashboard_and_quitting_it_the_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The table's Enter ends it with a URL: that server's own dashboard runs (its session, as
    `specmon --url` builds it), then the table again, until q on the table."""
    from specmon.cli import main, monitor
    from specmon.ui.prometheus_fleet_app import PrometheusFleetApp

    chosen = iter([A, None])
    monkeypatch.setattr(PrometheusFleetApp, "run", lambda self: next(chosen))
    opened: list[str] = []
    monkeypatch.setattr(monitor, "run_dashboard", lambda app: opened.append(app.session.url) or 0)
    assert main(["--prometheus", "http://prom:9090", "--db", str(tmp_path / "s.db")]) == 0
    assert opened == [A]


def _matrix(series: dict[str, list[list[Any]]]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"__name__": n}, "values": v} for n, v in series.items()],
        },
    }


RANGE = {
    "specmon_speedup_ratio": [[1000 + 60 * i, f"{-0.1 + 0.05 * i:g}"] for i in range(8)],
    "specmon_speedup_ratio_low": [[1420, "0.2"]],
    "specmon_speedup_ratio_high": [[1420, "0.3"]],
    "specmon_probe_decode_tokens_per_second": [[1000, "140"], [1420, "NaN"], [1480, "160"]],
}
"""A row's history as Prometheus's range query gives it: no accept length held."""


async def test_a_rows_history_is_one_range_query_in_the_figures_units() -> None:
    from specmon.session.prometheus_fleet import HISTORY_SPAN_S, read_history

    asked: list[httpx.QueryParams] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/v1/query_range"
        asked.append(request.url.params)
        return httpx.Response(200, json=_matrix(RANGE))

    history = await read_history(_api(handler), 'http://a"b:8000', points=60, now=1500.0)
    (params,) = asked  # one query for every figure, of this one server
    assert 'target="http://a\\"b:8000"' in params["query"]
    assert "specmon_probe_accept_length" in params["query"]
    assert float(params["start"]) == 1500.0 - HISTORY_SPAN_S and float(params["end"]) == 1500.0
    assert float(params["step"]) == HISTORY_SPAN_S / 60
    assert history.error is None and "accept length" not in history.points
    assert history.points["decode tok/s"] == ((1000.0, 140.0), (1480.0, 160.0))
    assert history.points["speedup"][-1] == (1420.0, pytest.approx(0.25))


async def test_a_rows_history_says_when_there_is_none_or_it_failed() -> None:
    from specmon.session.prometheus_fleet import NO_HISTORY, read_history
    from specmon.ui.row_history import history_lines

    empty = await read_history(_api(lambda r: httpx.Response(200, json=_matrix({}))), A, 60)
    assert history_lines(empty, 80) == [NO_HISTORY]
    failed = await read_history(_api(lambda r: httpx.Response(502, text="bad gateway")), A, 60)
    (line,) = history_lines(failed, 80)
    assert "HTTP 502" in line and "Prometheus" in line


async def test_a_rows_history_lines_fill_from_the_right_with_the_range() -> None:
    from specmon.session.prometheus_fleet import read_history
    from specmon.ui.row_history import LABEL_WIDTH, history_lines, spark_cells

    api = _api(lambda request: httpx.Response(200, json=_matrix(RANGE)))
    history = await read_history(api, A, spark_cells(100), now=1500.0)
    speedup, decode = history_lines(history, 100)  # no line for a figure with no points
    assert speedup.startswith("speedup") and decode.startswith("tok/s")
    # The speedup now with its latest interval, as the dashboard writes it; the span's range.
    assert "+25.0% [+20.0%, +30.0%] · 15 min: -10.0% to +25.0%" in speedup
    assert decode.endswith("160.0 · 15 min: 140.0 to 160.0")
    spark = speedup[LABEL_WIDTH : LABEL_WIDTH + spark_cells(100)]
    # From 400 s into the span of 900 (17 of 40 cells) the bars rising to the right.
    assert spark[:17] == " " * 17 and spark[17] == "▁" and spark.rstrip()[-1] == "█"
    assert all(len(line) <= 100 for line in history_lines(history, 100))


async def test_the_table_shows_the_highlighted_rows_history_under_it() -> None:
    """One range query of the server the cursor rests on (never one per row), drawn under the
    table; another server's, when the cursor moves, or that Prometheus holds none."""
    import asyncio

    from specmon.session.prometheus_fleet import NO_HISTORY
    from specmon.ui.prometheus_fleet_app import PrometheusFleetApp
    from specmon.ui.screens.fleet import FleetScreen

    ranges: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/query_range":
            query, end = request.url.params["query"], float(request.url.params["end"])
            ranges.append(query)
            held = {  # RANGE's points, its last at the end of the span asked
                n: [[end - 1500 + t, v] for t, v in points] for n, points in RANGE.items()
            }
            return httpx.Response(200, json=_matrix(held if f'target="{A}"' in query else {}))
        return _serving(request)

    client = httpx.AsyncClient(base_url="http://prom:9090", transport=httpx.MockTransport(handler))
    app = PrometheusFleetApp("http://prom:9090", 0.05, client=client)
    async with app.run_test(size=(120, 30)) as pilot:
        loop = asyncio.get_running_loop()

        async def until(shown: str) -> str:
            deadline = loop.time() + 60
            while True:
                screen = app.screen
                text = screen.detail if isinstance(screen, FleetScreen) else ""
                if shown in text:
                    return text
                assert loop.time() < deadline, (shown, text)
                await pilot.pause(0.05)

        await until(NO_HISTORY)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        assert screen.highlighted() == B  # losing: the worst first, and none of it held
        await pilot.press("down")
        text = await until("tok/s ")
        assert screen.highlighted() == A and "\nspeedup " in text
        assert "+25.0% [+20.0%, +30.0%]" in text and NO_HISTORY not in text
        # One server's at a time, the one highlighted: B's, then A's.
        assert all(q.count('target="') == 1 for q in ranges)
        assert f'target="{B}"' in ranges[0] and f'target="{A}"' in ranges[-1]


async def test_the_figures_are_read_every_few_seconds_and_the_state_at_every_reading() -> None:
    """Every family at the first reading and once `figures_every` has passed; between, the up
    and probe gauges alone, the rows not built again while those do not change."""
    from specmon.session.prometheus_fleet import PrometheusFleet
    from specmon.session.prometheus_rows import STATE

    queries: list[tuple[str, ...]] = []
    series = {family: list(samples) for family, samples in SERIES.items()}

    def handler(request: httpx.Request) -> httpx.Response:
        queries.append(_families(request))
        families = _families(request)
        named = len(families) > 1
        body = [
            ({**labels, "__name__": family} if named else labels, value)
            for family in families
            for labels, value in series.get(family, [])
        ]
        return httpx.Response(200, json=_vector(body))

    now = [0.0]
    client = httpx.AsyncClient(base_url="http://prom:9090", transport=httpx.MockTransport(handler))
    fleet = PrometheusFleet(client, "http://prom:9090", figures_every=5.0, clock=lambda: now[0])
    first = await fleet.read()
    assert sorted(queries) == sorted([FAMILIES, *((family,) for family in LABELLED)])
    queries.clear()
    now[0] = 1.0
    series["specmon_probe_decode_tokens_per_second"] = [({"target": A}, "999")]
    assert await fleet.read() is first  # the state alone, unchanged: the same rows
    assert queries == [STATE]
    series["specmon_target_up"] = [({"target": A}, "0"), ({"target": B}, "1")]
    now[0] = 2.0
    second = await fleet.read()
    assert second.rows is not None and first.rows is not None
    a = next(r for r in second.rows if r.url == A)
    assert a.state == "down" and a.decode_tok_s == 150  # its figures: those read at 0 s
    assert next(r for r in second.rows if r.url == B) == next(r for r in first.rows if r.url == B)
    queries.clear()
    now[0] = 5.0
    third = await fleet.read()
    assert len(queries) == 1 + len(LABELLED)  # every family again
    assert third.rows is not None
    assert next(r for r in third.rows if r.url == A).decode_tok_s == 999
