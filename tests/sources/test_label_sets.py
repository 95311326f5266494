"""Label sets and unchanged lines parsed once, moved values read alone (sources/label_sets.py,
scrape_memo.py): a reading with the endpoint's memo is the reading of a fresh one."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from specmon.agent import render_metrics
from specmon.model import GpuDevice, GpuProcess, Telemetry
from specmon.sim.gpus import simulated_telemetry
from specmon.sources import scrape_memo
from specmon.sources.dcgm import telemetry_from_text
from specmon.sources.label_sets import LabelSets
from specmon.sources.scrape_memo import ParsedSample, ScrapeMemo, usable

DCGM = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm"
URL = "http://gpu-box:9400/metrics"


def test_real_dcgm_exporter_texts_read_the_same() -> None:
    for name in ("dcgm-exporter-8gpu.txt", "dcgm-exporter-k8s.txt"):
        text = (DCGM / name).read_text()
        sets = ScrapeMemo()
        plain = telemetry_from_text(text, URL)
        assert plain.gpus
        assert telemetry_from_text(text, URL, sets) == plain, name
        assert telemetry_from_text(text, URL, sets) == plain, name  # from the cache


def test_readings_that_move_read_the_same() -> None:
    sets = ScrapeMemo()
    for reading in range(5):
        text = render_metrics(simulated_telemetry(8, reading % 2 == 0, reading)).decode()
        assert telemetry_from_text(text, URL, sets) == telemetry_from_text(text, URL)


def test_a_brace_outside_labels_is_left_to_the_parser() -> None:
    text = '# HELP x a {brace} in help\n# TYPE x gauge\nx{gpu="0"} 1\n'
    assert LabelSets().shorten(text).startswith("# HELP x a {brace} in help\n")


_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)


@given(gpu_name=_names, process=_names)
def test_any_label_values_read_the_same(gpu_name: str, process: str) -> None:
    """Quotes, braces, backslashes and newlines in label values (the text format escapes them)."""
    device = GpuDevice(
        index=0,
        name=gpu_name or None,
        utilization_pct=50.0,
        processes=(GpuProcess(7, 1.0, process or None, None, False),),
    )
    text = render_metrics(Telemetry("nvml", "NVML on this machine", gpus=(device,))).decode()
    sets = ScrapeMemo()
    assert telemetry_from_text(text, URL, sets) == telemetry_from_text(text, URL)
    assert telemetry_from_text(text, URL, sets) == telemetry_from_text(text, URL)


def test_the_memo_follows_changed_removed_and_nan_lines() -> None:
    memo = ScrapeMemo()
    first = '# TYPE a gauge\na{gpu="0"} 1\nb{gpu="0"} 2\nc 3\n'
    a, b = ParsedSample("a", {"gpu": "0"}, 1.0), ParsedSample("b", {"gpu": "0"}, 2.0)
    assert memo.parse(first) == [a, b, ParsedSample("c", {}, 3.0)]
    second = 'a{gpu="0"} 5\nb{gpu="0"} 2\nd NaN\n'  # a moved, c went, d is NaN
    assert memo.parse(second) == [
        ParsedSample("a", {"gpu": "0"}, 5.0),
        ParsedSample("b", {"gpu": "0"}, 2.0),
    ]
    assert memo.parse(second) == ScrapeMemo().parse(second)  # from the memo, the same


def test_a_line_that_is_not_one_sample_fails_after_good_scrapes() -> None:
    memo = ScrapeMemo()
    memo.parse('a{gpu="0"} 1\n')
    with pytest.raises(ValueError, match="invalid metric name"):
        memo.parse('a{gpu="0"} 1\n<html>not metrics</html>\n')


def test_a_shared_memo_keeps_a_bounded_number_of_lines() -> None:
    """/metrics's memo serves every server: it keeps lines of several scrapes, up to `keep`."""
    memo = ScrapeMemo(keep=3)
    memo.parse("a 1\nb 2\n")
    assert memo.parse("a 1\nc 3\n") == [ParsedSample("a", {}, 1.0), ParsedSample("c", {}, 3.0)]
    assert memo.parse("b 2\n") == [ParsedSample("b", {}, 2.0)]  # still held: 3 lines
    assert memo.parse("d 4\n") == [ParsedSample("d", {}, 4.0)]  # full: started afresh
    assert memo.parse("a 1\nd 4\n") == ScrapeMemo().parse("a 1\nd 4\n")


def test_a_moved_value_is_read_without_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """A series seen before: only its number is read; a timestamped line always goes to the
    parser (its last number is not the value)."""
    memo = ScrapeMemo()
    memo.parse('a{gpu="0",x="p q"} 1\nb 2 1700000000000\nc 3\n')
    texts: list[str] = []
    parse = scrape_memo.text_string_to_metric_families
    monkeypatch.setattr(
        scrape_memo,
        "text_string_to_metric_families",
        lambda text: texts.append(text) or parse(text),
    )
    moved = 'a{gpu="0",x="p q"} 1.5e3\nb 2 1700000001000\nc NaN\n'
    assert memo.parse(moved) == [
        ParsedSample("a", {"gpu": "0", "x": "p q"}, 1500.0),
        ParsedSample("b", {}, 2.0),
    ]
    assert texts == ["b 2 1700000001000\n"]


_values = st.sampled_from(["1", "2.5", "-3", "1e3", "+Inf", "NaN", "1_0", "0x1", "7."])
_heads = st.sampled_from(["a", 'a{gpu="0"}', 'a{gpu="0",n="x 1"}', "a ", 'b{le="+Inf"}', "a 1"])
_lines = st.builds(
    lambda h, v, ts: f"{h} {v}{ts}", _heads, _values, st.sampled_from(["", " 1700000000000"])
)


@given(st.lists(st.lists(_lines, min_size=1, max_size=6), min_size=1, max_size=5))
def test_scrapes_read_through_the_memo_read_as_fresh(scrapes: list[list[str]]) -> None:
    memo = ScrapeMemo()
    for lines in scrapes:
        text = "\n".join(lines) + "\n"
        try:
            fresh = ScrapeMemo().parse(text)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            with pytest.raises(type(exc)):
                memo.parse(text)
            continue
        assert memo.parse(text) == fresh


# The fast path as the parser it is: any run of scrapes, through one memo, reads as
# prometheus-client reads each scrape alone (comments left out, as `ScrapeMemo.parse` says), and
# fails where it fails. Values include those the parser and `float` read differently.
_VALUES = ("0", "1", "-1.5", "1e3", "1.5E-3", ".5", "1.", "+Inf", "-Inf", "Inf", "NaN", "nan",
           "Infinity", "1_0", "0x10", "1e400", "-0", "", "x")  # fmt: skip


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_label_values = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
_blocks = st.one_of(
    st.just(""),
    st.just("{}"),
    st.dictionaries(st.sampled_from(["gpu", "le", "model_name", "x"]), _label_values, max_size=3)
    .map(lambda labels: ",".join(f'{k}="{_escaped(v)}"' for k, v in labels.items()))
    .map(lambda inner: "{" + inner + "}"),
    st.sampled_from(['{x="1",}', '{x="a}b"}', '{x="unclosed}', "{x=1}", '{="v"}']),
)
_names = st.sampled_from(["a", "b_total", "c:d"])
_separators = st.sampled_from([" ", "  ", "\t"])
_heads = st.builds(
    lambda name, block, sep: f"{name}{block}{sep}",
    st.one_of(_names, st.just("1bad")),
    _blocks,
    _separators,
)
_good_heads = st.builds(
    lambda name, block, sep: f"{name}{block}{sep}",
    _names,
    _blocks.filter(lambda b: "x=" not in b and '=""' not in b and "}b" not in b),
    _separators,
)
_comments = st.sampled_from(["# HELP a some {brace}", "# TYPE a gauge", "#", "<html>"])


@st.composite
def _scrapes(
    draw: st.DrawFn, heads_: st.SearchStrategy[str], *, noise: bool = True
) -> list[list[str]]:
    """Scrapes of a few series (heads: name, labels, separator) seen again and again, as an
    endpoint serves them, with values that change; `noise`: timestamps and comments too."""
    heads = draw(st.lists(heads_, min_size=1, max_size=4))
    stamps = ["", " 1700000000000", " "] if noise else [""]
    line = st.builds(
        lambda head, value, stamp: f"{head}{value}{stamp}",
        st.sampled_from(heads),
        st.sampled_from(_VALUES),
        st.sampled_from(stamps),
    )
    if noise:
        line = st.one_of(line, _comments)
    return draw(st.lists(st.lists(line, max_size=6), min_size=1, max_size=8))


def _reference(text: str) -> list[ParsedSample] | type[Exception]:
    """prometheus-client's reading of the samples alone, or the failure it raised."""
    samples = "".join(line + "\n" for line in text.split("\n") if line.strip() and line[0] != "#")
    try:
        return [
            ParsedSample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(samples)
            for s in family.samples
            if usable(float(s.value))  # NaN, infinities and past 2**53 are left out
        ]
    except (ValueError, TypeError, IndexError, KeyError):
        return Exception


@pytest.mark.slow
@pytest.mark.parametrize("keep", [None, 4])
@given(scrapes=_scrapes(_heads))
def test_any_run_of_scrapes_reads_as_the_parser_reads_each(
    keep: int | None, scrapes: list[list[str]]
) -> None:
    _read_alike(ScrapeMemo(keep=keep), scrapes)


@pytest.mark.slow
@settings(max_examples=500)
@given(scrapes=_scrapes(_good_heads, noise=False))
def test_values_read_alike_on_series_seen_before(scrapes: list[list[str]]) -> None:
    """Series that parse, again and again: their values take the fast path when `float` and
    the parser agree on them, and the parser's otherwise."""
    _read_alike(ScrapeMemo(), scrapes)


def _read_alike(memo: ScrapeMemo, scrapes: list[list[str]]) -> None:
    for lines in scrapes:
        text = "\n".join(lines) + "\n"
        expected = _reference(text)
        if expected is Exception:
            with pytest.raises((ValueError, TypeError, IndexError, KeyError)):
                memo.parse(text)
        else:
            assert memo.parse(text) == expected, text
