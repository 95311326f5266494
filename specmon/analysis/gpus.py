"""GPU readings summarised: the worst GPU, throttling, foreign processes, a bench's GPU state and
how two of them differ. Pure: no I/O, no clocks; the dashboard's panel, `check` and the
comparison all format from here.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from specmon.model import GpuDevice, GpuProcess, GpuState, Telemetry

MISSING = "—"

THROTTLING = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}
)
"""Clock event reasons that hold a loaded GPU below the clock it asks for. The others (idle,
application clock settings, sync boost, display clocks) are not throttling."""

CLOCK_TOLERANCE = 0.05
"""SM clocks under load that differ by more than this fraction make a comparison uneven."""

POWER_TOLERANCE_W = 1.0


def short_name(name: str | None) -> str:
    """ "NVIDIA H200" → "H200"; unknown → "?"."""
    if not name:
        return "?"
    return name.removeprefix("NVIDIA ").strip() or name


def throttling(gpu: GpuDevice) -> tuple[str, ...]:
    """The throttling reasons among a GPU's clock event reasons (empty when unknown)."""
    return tuple(r for r in gpu.throttle_reasons or () if r in THROTTLING)


def is_busy(gpu: GpuDevice) -> bool:
    """Whether the GPU is working: not flagged idle by the driver (or, without the flags, with
    utilisation above 0). An idle GPU's low clocks say nothing about throttling."""
    reasons = gpu.throttle_reasons
    if reasons is not None:
        return "idle" not in reasons
    return gpu.utilization_pct is None or gpu.utilization_pct > 0


def models(gpus: Iterable[GpuDevice], compact: bool = False) -> str:
    """ "8 × H200", or "4 × H200, 4 × H100" on a mixed box; `compact`: "8×H100" for a table
    cell ("NVIDIA H100 80GB HBM3" by its first word)."""
    counts: dict[str, int] = {}
    for gpu in gpus:
        name = short_name(gpu.name)
        name = name.split()[0] if compact else name
        counts[name] = counts.get(name, 0) + 1
    times = "×" if compact else " × "
    return ", ".join(f"{n}{times}{name}" for name, n in counts.items())


def describe_process(index: int, process: GpuProcess) -> str:
    """ "python (pid 4242) on GPU 3: 20480 MiB, SM 35%"."""
    text = f"{process.name or '?'} (pid {process.pid}) on GPU {index}"
    details = []
    if process.used_memory_mib is not None:
        details.append(f"{process.used_memory_mib:.0f} MiB")
    if process.sm_util_pct is not None:
        details.append(f"SM {process.sm_util_pct:.0f}%")
    return text + (": " + ", ".join(details) if details else "")


@dataclass(frozen=True, slots=True)
class GpuSummary:
    """All GPUs of one reading at a glance (the panel's header, `check`'s line)."""

    count: int
    models: str
    max_util_pct: float | None
    busiest: int | None
    """Index of the GPU with the highest utilisation."""
    slowest: int | None
    """Index of the busy GPU with the lowest SM clock: the one a tensor-parallel group waits for."""
    memory_used_mib: float | None
    """Sums over the GPUs that report them."""
    memory_total_mib: float | None
    power_w: float | None
    max_temperature_c: float | None
    throttled: tuple[tuple[int, tuple[str, ...]], ...]
    """(index, reasons) of every throttling GPU."""
    throttle_known: bool
    """Whether any GPU reported its clock event reasons (dcgm-exporter's defaults do not)."""
    failed: tuple[tuple[int, str], ...]
    """(index, error) of every GPU that could not be read."""
    other_processes: tuple[tuple[int, GpuProcess], ...]
    """(index, process) of every process that is known not to be the server's."""


def _sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _max(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _min(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def summarize_gpus(gpus: Sequence[GpuDevice]) -> GpuSummary:
    """Summarise one reading's GPUs."""
    read = [g for g in gpus if g.error is None]
    utilised = [g for g in read if g.utilization_pct is not None]
    clocked = [g for g in read if g.sm_clock_mhz is not None and is_busy(g)]
    busiest = max(utilised, key=lambda g: g.utilization_pct or 0.0, default=None)
    slowest = min(clocked, key=lambda g: g.sm_clock_mhz or 0.0, default=None)
    return GpuSummary(
        count=len(gpus),
        models=models(gpus),
        max_util_pct=None if busiest is None else busiest.utilization_pct,
        busiest=None if busiest is None else busiest.index,
        slowest=None if slowest is None else slowest.index,
        memory_used_mib=_sum(g.memory_used_mib for g in read),
        memory_total_mib=_sum(g.memory_total_mib for g in read),
        power_w=_sum(g.power_w for g in read),
        max_temperature_c=_max(g.temperature_c for g in read),
        throttled=tuple((g.index, throttling(g)) for g in read if throttling(g)),
        throttle_known=any(g.clock_event_mask is not None for g in read),
        failed=tuple((g.index, g.error) for g in gpus if g.error is not None),
        other_processes=tuple(
            (g.index, p) for g in read for p in g.processes or () if p.is_server is False
        ),
    )


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    """One line about the GPUs, and how worrying it is."""

    level: Literal["ok", "info", "warn"]
    text: str


def gpu_verdict(telemetry: Telemetry) -> GpuVerdict:
    """`check`'s GPU finding, e.g. "8 × H200, max util 97%, no throttling (NVML on this machine)".

    No GPU data is information, not a fault; throttling, an unreadable GPU or another process on
    a GPU are warnings.
    """
    if telemetry.unavailable is not None:
        hint = f"; {telemetry.hint}" if telemetry.hint else ""
        return GpuVerdict("info", telemetry.unavailable + hint)
    if not telemetry.gpus:
        return GpuVerdict("info", f"none ({telemetry.source} sees no GPU)")
    s = summarize_gpus(telemetry.gpus)
    parts = [s.models]
    util = MISSING if s.max_util_pct is None else f"{s.max_util_pct:.0f}%"
    parts.append(f"max util {util}")
    if s.throttled:
        parts.append("throttling: " + ", ".join(f"GPU {i} {'+'.join(r)}" for i, r in s.throttled))
    else:
        parts.append("no throttling" if s.throttle_known else "throttling unknown")
    parts.extend(f"GPU {i}: {error}" for i, error in s.failed)
    if s.other_processes:
        parts.append(
            "other processes: " + "; ".join(describe_process(i, p) for i, p in s.other_processes)
        )
    where = telemetry.source
    if telemetry.driver_version:
        where += f", driver {telemetry.driver_version}"
    level: Literal["ok", "warn"] = "warn" if s.throttled or s.failed or s.other_processes else "ok"
    return GpuVerdict(level, ", ".join(parts) + f" ({where})")


def gpu_worst(telemetry: Telemetry) -> str | None:
    """The worst of the GPUs in a table cell: "GPU 3 failed", "GPU 2 throttled" (+ how many
    more), "GPU 1 shared" (another process on it), else "8×H200 97% 71°C" (the highest
    utilisation and temperature); None without readings. The reasons in full are
    `gpu_verdict`'s."""
    if telemetry.unavailable is not None:
        return None
    s = summarize_gpus(telemetry.gpus)
    for found, what in (
        (s.failed, "failed"),
        (s.throttled, "throttled"),
        (s.other_processes, "shared"),
    ):
        if found:
            more = f" +{len(found) - 1}" if len(found) > 1 else ""
            return f"GPU {found[0][0]} {what}{more}"
    if not s.count:
        return "no GPU seen"
    util = MISSING if s.max_util_pct is None else f"{s.max_util_pct:.0f}%"
    temp = "" if s.max_temperature_c is None else f" {s.max_temperature_c:.0f}°C"
    return f"{models(telemetry.gpus, compact=True)} {util}{temp}"


def _fraction(used: float | None, total: float | None, unit: float, suffix: str) -> str:
    if used is None and total is None:
        return MISSING
    left = MISSING if used is None else f"{used / unit:.{1 if unit > 1 else 0}f}"
    right = MISSING if total is None else f"{total / unit:.{1 if unit > 1 else 0}f}"
    return f"{left}/{right} {suffix}"


def gpu_line(gpu: GpuDevice) -> str:
    """One GPU as one line of text, e.g.
    "GPU 0 H200 util 97% mem 71.2/139.8 GiB power 612/700 W SM 1980/1980 MHz 54°C sw_power_cap".
    """
    head = f"GPU {gpu.index} {short_name(gpu.name)}"
    if gpu.error is not None:
        return f"{head} error: {gpu.error}"
    util = MISSING if gpu.utilization_pct is None else f"{gpu.utilization_pct:.0f}%"
    temp = MISSING if gpu.temperature_c is None else f"{gpu.temperature_c:.0f}°C"
    reasons = gpu.throttle_reasons
    events = MISSING if reasons is None else " ".join(r for r in reasons if r != "idle") or "-"
    return " ".join(
        [
            head,
            f"util {util}",
            "mem " + _fraction(gpu.memory_used_mib, gpu.memory_total_mib, 1024, "GiB"),
            "power " + _fraction(gpu.power_w, gpu.power_limit_w, 1, "W"),
            "SM " + _fraction(gpu.sm_clock_mhz, gpu.sm_clock_max_mhz, 1, "MHz"),
            temp,
            events,
        ]
    )


def gpu_state(readings: Sequence[Telemetry]) -> GpuState | None:
    """Summarise the readings taken during a bench into the state kept with its snapshot.

    Returns:
        None when no reading had GPUs.
    """
    usable = [t for t in readings if t.unavailable is None and t.gpus]
    if not usable:
        return None
    last = usable[-1]
    devices = [g for t in usable for g in t.gpus if g.error is None]
    # The GPU a tensor-parallel group waits for sets its pace: the lowest busy clock per sample.
    loaded = [
        min(clocks)
        for t in usable
        if (clocks := [g.sm_clock_mhz for g in t.gpus if g.sm_clock_mhz is not None and is_busy(g)])
    ]
    others: dict[tuple[int, int], GpuProcess] = {}
    for g in devices:
        for p in g.processes or ():
            if p.is_server is False:
                seen = others.get((g.index, p.pid))
                others[(g.index, p.pid)] = p if seen is None else _larger(seen, p)
    names = sorted({short_name(g.name) for g in last.gpus if g.error is None})
    return GpuState(
        source=last.source,
        gpu_count=len(last.gpus),
        gpu_name=", ".join(names) or None,
        sm_clock_mhz=statistics.median(loaded) if loaded else None,
        sm_clock_max_mhz=_min(g.sm_clock_max_mhz for g in devices),
        power_limit_w=_min(g.power_limit_w for g in devices),
        max_temperature_c=_max(g.temperature_c for g in devices),
        throttle_reasons=tuple(sorted({r for g in devices for r in throttling(g)})),
        other_processes=tuple(describe_process(i, p) for (i, _), p in sorted(others.items())),
        samples=len(usable),
    )


def _larger(a: GpuProcess, b: GpuProcess) -> GpuProcess:
    """The process with the larger of each figure seen (memory, SM share)."""
    return GpuProcess(
        pid=a.pid,
        used_memory_mib=_max([a.used_memory_mib, b.used_memory_mib]),
        name=a.name or b.name,
        sm_util_pct=_max([a.sm_util_pct, b.sm_util_pct]),
        is_server=a.is_server,
    )


def describe_gpu_state(state: GpuState) -> str:
    """One line, e.g. "8 × H200, SM 1980 MHz under load (max 1980), power limit 700 W, no
    throttling, no other processes (12 samples, NVML on this machine)"."""
    parts = [f"{state.gpu_count} × {state.gpu_name or '?'}"]
    clock = MISSING if state.sm_clock_mhz is None else f"{state.sm_clock_mhz:.0f}"
    if state.sm_clock_max_mhz is not None:
        clock += f" MHz under load (max {state.sm_clock_max_mhz:.0f})"
    else:
        clock += " MHz under load"
    parts.append(f"SM {clock}")
    if state.power_limit_w is not None:
        parts.append(f"power limit {state.power_limit_w:.0f} W")
    reasons = state.throttle_reasons
    parts.append("throttling: " + ", ".join(reasons) if reasons else "no throttling seen")
    others = state.other_processes
    parts.append("other processes: " + "; ".join(others) if others else "no other processes")
    return ", ".join(parts) + f" ({state.samples} samples, {state.source})"


def gpu_differences(base: GpuState | None, run: GpuState | None) -> list[str]:
    """How the GPU conditions of a baseline and a run differ, one warning each.

    These do not invalidate a baseline (the configuration may be the same), but the speedup then
    also measures the GPUs' difference. Nothing is said when either side has no GPU state.
    """
    if base is None or run is None:
        return []
    warnings: list[str] = []
    if base.gpu_count != run.gpu_count:
        warnings.append(f"{base.gpu_count} GPUs in the baseline, {run.gpu_count} in the run")
    if base.gpu_name and run.gpu_name and base.gpu_name != run.gpu_name:
        warnings.append(
            f"different GPUs: {base.gpu_name} in the baseline, {run.gpu_name} in the run"
        )
    if base.sm_clock_mhz and run.sm_clock_mhz:
        change = run.sm_clock_mhz / base.sm_clock_mhz - 1
        if abs(change) > CLOCK_TOLERANCE:
            warnings.append(
                f"SM clock under load {abs(change):.0%} {'lower' if change < 0 else 'higher'} "
                f"in the run ({run.sm_clock_mhz:.0f} vs {base.sm_clock_mhz:.0f} MHz)"
            )
    if (
        base.power_limit_w is not None
        and run.power_limit_w is not None
        and abs(base.power_limit_w - run.power_limit_w) > POWER_TOLERANCE_W
    ):
        warnings.append(
            f"power limit {base.power_limit_w:.0f} W in the baseline, "
            f"{run.power_limit_w:.0f} W in the run"
        )
    for side, mine, theirs in (("run", run, base), ("baseline", base, run)):
        only = sorted(set(mine.throttle_reasons) - set(theirs.throttle_reasons))
        if only:
            warnings.append(f"throttling during the {side} only: {', '.join(only)}")
    for side, state in (("baseline", base), ("run", run)):
        if state.other_processes:
            warnings.append(
                f"other processes on the GPUs during the {side}: "
                + "; ".join(state.other_processes)
            )
    return warnings
