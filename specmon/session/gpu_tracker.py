"""The watched server's GPUs as the dashboard follows them: the latest telemetry, the recent
readings a baseline's GPU state is compared with, each GPU's utilisation history, and the GPU
panel's View. No I/O and no clock, as `LiveState`, whose part it is."""

from __future__ import annotations

from collections import deque

from specmon.analysis.gpus import gpu_line, gpu_state, gpu_verdict, gpu_worst
from specmon.model import GpuState, Sample, SourceName, Telemetry
from specmon.session.view import GpuView

RECENT_TELEMETRY = 20  # GPU readings summarised for the baseline comparison
GPU_HISTORY = 60  # per-GPU utilisation points kept (a minute at 1 s)


class GpuTracker:
    """The GPU readings of the watched server's samples."""

    def __init__(self) -> None:
        self.telemetry: Telemetry | None = None
        self.recent: deque[Telemetry] = deque(maxlen=RECENT_TELEMETRY)
        self.util: dict[int, deque[float]] = {}
        """Each GPU's utilisation history, by index."""
        self._seq = 0

    def update(self, sample: Sample) -> None:
        """Take the sample's GPU reading, if it is a new one."""
        reading = sample.readings.get(SourceName.GPU)
        if reading is None or reading.seq == self._seq:
            return
        self._seq = reading.seq
        if not isinstance(reading.value, Telemetry):
            return
        self.telemetry = reading.value
        self.recent.append(reading.value)
        for gpu in reading.value.gpus:
            history = self.util.setdefault(gpu.index, deque(maxlen=GPU_HISTORY))
            if gpu.utilization_pct is not None:
                history.append(gpu.utilization_pct)

    def state(self) -> GpuState | None:
        """The GPUs' state over the recent readings, to compare with a baseline's."""
        return gpu_state(list(self.recent))

    def view(self, error: str | None, missing: list[tuple[str, str]]) -> GpuView:
        """The GPU panel's values; why they are missing (`error`: the GPU source's) goes to
        `missing`."""
        t = self.telemetry
        if t is None:
            why = error or "no GPU reading yet"
            missing.append(("GPUs", why))
            return GpuView(None, why, None, False, (), (), None)
        why_not = unavailable(t)
        if why_not is not None:
            missing.append(("GPUs", why_not))
        verdict = gpu_verdict(t) if t.unavailable is None else None
        return GpuView(
            source=t.source,
            unavailable=why_not,
            summary=verdict.text if verdict else None,
            warn=verdict is not None and verdict.level == "warn",
            lines=tuple(gpu_line(g) for g in t.gpus),
            util_history=tuple(tuple(self.util.get(g.index, ())) for g in t.gpus),
            host=_host_line(t),
            worst=gpu_worst(t),
        )


def unavailable(value: object) -> str | None:
    """Why a reading that succeeded carries no figures (only telemetry says so), with the fix."""
    if isinstance(value, Telemetry) and value.unavailable is not None:
        return value.unavailable + (f"; {value.hint}" if value.hint else "")
    return None


def _host_line(t: Telemetry) -> str | None:
    """`host CPU 12% · mem 40/128 GiB · server pid 123 CPU 95% RSS 2.1 GiB`, from what is known."""
    parts = []
    host = t.host
    if host is not None:
        if host.cpu_percent is not None:
            parts.append(f"host CPU {host.cpu_percent:.0f}%")
        if host.memory_used_bytes is not None and host.memory_total_bytes:
            parts.append(
                f"mem {host.memory_used_bytes / 2**30:.0f}/"
                f"{host.memory_total_bytes / 2**30:.0f} GiB"
            )
    process = t.server_process
    if process is not None:
        cpu = f" CPU {process.cpu_percent:.0f}%" if process.cpu_percent is not None else ""
        rss = f" RSS {process.rss_bytes / 2**30:.1f} GiB" if process.rss_bytes is not None else ""
        parts.append(f"server pid {process.pid}{cpu}{rss}")
    elif t.server_process_missing:
        parts.append(f"server process: {t.server_process_missing}")
    return " · ".join(parts) or None
