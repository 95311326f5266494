"""Hostile files and bodies read without a server (issue 36): crafted recordings replayed, a
config file nested deep, JSON nested past the bound, /metrics with numbers past a float or
more samples than are read. Each gives the typed error of any malformed input of its reader, in
one line with the documented exit code; never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specmon.analysis.drafting import DraftSteps, draft_level, drafting
from specmon.cli import main
from specmon.errors import ResponseTooLarge
from specmon.nesting import MAX_DEPTH, TooDeep, loads_json, loads_toml
from specmon.session.recording import FORMAT, VERSION, RecordingError, read_recording
from specmon.sources.metrics import MAX_SAMPLES, metrics_from_text

HEADER = {"format": FORMAT, "version": VERSION, "target": "http://s:1", "interval": 1.0}
SAMPLE = {"at": 100.5, "kind": "sample", "args": [{"t": 1.0, "wall": 100.5, "readings": {}}]}


def _recording(tmp_path: Path, header: dict[str, object], *lines: str) -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines]) + "\n")
    return path


def _replay_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["replay", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 1, err
    (line,) = err.splitlines()
    return line


@pytest.mark.parametrize("started_at", [math.nan, math.inf, 1e308])
def test_a_recording_whose_start_is_not_a_time_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], started_at: float
) -> None:
    path = _recording(tmp_path, {**HEADER, "started_at": started_at}, json.dumps(SAMPLE))
    assert "line 1: header.started_at: not a time" in _replay_error(path, capsys)


@pytest.mark.parametrize("field", ["interval", "probe_every", "max_age"])
@pytest.mark.parametrize("value", [math.nan, 0.0, -1.0, 1e308])
def test_a_recording_whose_spans_are_not_spans_is_refused(
    tmp_path: Path, field: str, value: float
) -> None:
    path = _recording(tmp_path, {**HEADER, "started_at": 100.0, field: value})
    with pytest.raises(RecordingError, match=f"header.{field}: not a span"):
        read_recording(path)


@pytest.mark.parametrize("at", [math.nan, -math.inf, 1e308])
def test_an_input_whose_time_is_not_a_time_is_named(tmp_path: Path, at: float) -> None:
    path = _recording(tmp_path, {**HEADER, "started_at": 100.0}, json.dumps({**SAMPLE, "at": at}))
    with pytest.raises(RecordingError, match="line 2: at: expected a time"):
        read_recording(path)


def test_a_sample_whose_clock_is_nan_is_named(tmp_path: Path) -> None:
    args = [{"t": math.nan, "wall": 100.5, "readings": {}}]
    line = json.dumps({**SAMPLE, "args": args})
    path = _recording(tmp_path, {**HEADER, "started_at": 100.0}, line)
    with pytest.raises(RecordingError, match=r"line 2: sample\.t: not a time"):
        read_recording(path)


@pytest.mark.parametrize("depth", [100, 5_000, 100_000])
def test_a_line_nested_deep_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    deep = '{"at": 100.5, "kind": "sample", "args": ' + "[" * depth + "]" * depth + "}"
    path = _recording(tmp_path, {**HEADER, "started_at": 100.0}, deep, json.dumps(SAMPLE))
    assert "line 2" in _replay_error(path, capsys)


def test_a_header_nested_deep_is_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"format": ' + "[" * 5000 + "]" * 5000 + "}\n")
    assert "is not a specmon recording" in _replay_error(path, capsys)


@pytest.mark.parametrize("depth", [100, 5_000])
def test_a_config_file_nested_deep_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("interval = " + "[" * depth + "]" * depth + "\n")
    code = main(["--once", "--json", "--url", "http://127.0.0.1:9", "--config", str(config)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 2
    (line,) = err.splitlines()
    assert f"is not valid TOML: nested more than {MAX_DEPTH} levels deep" in line


def test_nesting_up_to_the_bound_reads() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_json(text) is not None
    with pytest.raises(TooDeep):
        loads_json("[" + text + "]")
    assert loads_toml("a = " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    with pytest.raises(TooDeep):
        loads_toml("a = " + text)


@pytest.mark.parametrize("value", ["1e308", "-1e308", "+Inf", "-Inf", "NaN", "9.1e15"])
def test_metrics_values_past_a_count_are_unknown(value: str) -> None:
    text = (
        f'sglang:spec_num_draft_tokens{{model_name="m"}} {value}\n'
        f'sglang:generation_tokens_total{{model_name="m"}} {value}\n'
        'sglang:num_running_reqs{model_name="m"} 3\n'
    )
    metrics = metrics_from_text(text)
    assert metrics.spec_num_draft_tokens is None
    assert metrics.generation_tokens_total is None
    assert metrics.num_running_reqs == 3


def test_a_draft_length_past_a_float_is_unknown() -> None:
    """The analysis' own guard, whatever its inputs: a level, never OverflowError."""
    figures = drafting([DraftSteps(steps=1e300, drafted=1e-10, draft_tokens=1e300, source="x")])
    assert figures is not None and figures.draft_length is None
    assert draft_level(figures) == 0


def test_metrics_with_too_many_wanted_samples_are_refused() -> None:
    lines = "".join(
        f'sglang:num_requests_total{{model_name="m",i="{i}"}} 1\n' for i in range(MAX_SAMPLES + 1)
    )
    with pytest.raises(ResponseTooLarge, match="samples of the series specmon reads"):
        metrics_from_text(lines)
    lines = "".join(f'sglang:junk_total{{i="{i}"}} 1\n' for i in range(MAX_SAMPLES * 2))
    metrics_from_text(lines + 'sglang:num_running_reqs{model_name="m"} 3\n')
