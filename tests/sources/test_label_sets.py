"""Label sets parsed once (sources/label_sets.py): a reading with them is the reading without."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from specmon.agent import render_metrics
from specmon.model import GpuDevice, GpuProcess, Telemetry
from specmon.sim.gpus import simulated_telemetry
from specmon.sources.dcgm import telemetry_from_text
from specmon.sources.label_sets import LabelSets

DCGM = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm"
URL = "http://gpu-box:9400/metrics"


def test_real_dcgm_exporter_texts_read_the_same() -> None:
    for name in ("dcgm-exporter-8gpu.txt", "dcgm-exporter-k8s.txt"):
        text = (DCGM / name).read_text()
        sets = LabelSets()
        plain = telemetry_from_text(text, URL)
        assert plain.gpus
        assert telemetry_from_text(text, URL, sets) == plain, name
        assert telemetry_from_text(text, URL, sets) == plain, name  # from the cache


def test_readings_that_move_read_the_same() -> None:
    sets = LabelSets()
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
    device = GpuDevice(index=0, name=gpu_name or None, utilization_pct=50.0,
                       processes=(GpuProcess(7, 1.0, process or None, None, False),))  # fmt: skip
    text = render_metrics(Telemetry("nvml", "NVML on this machine", gpus=(device,))).decode()
    sets = LabelSets()
    assert telemetry_from_text(text, URL, sets) == telemetry_from_text(text, URL)
    assert telemetry_from_text(text, URL, sets) == telemetry_from_text(text, URL)
