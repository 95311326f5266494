"""Plain-text rendering of bench runs and summaries (the CLI's human output)."""

from __future__ import annotations

from collections.abc import Callable

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.conditions import conditions_of, one_liner
from specmon.analysis.pooled import pool
from specmon.analysis.stats import summarize
from specmon.model import RunFigures, ServerInfo, Snapshot
from specmon.wording import counted

DASH = "—"
DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")


def run_line(index: int, total: int, f: RunFigures, phase: str = "Run") -> str:
    """`Run 1/5: 500 tokens in 7.94s = 63.0 tok/s (prompt: 32 toks) | decode 63.4 tok/s | …`."""
    prompt = f" (prompt: {f.prompt_tokens} toks)" if f.prompt_tokens is not None else ""
    line = (
        f"{phase} {index}/{total}: {f.completion_tokens} tokens in {f.e2e_s:.2f}s = "
        f"{f.e2e_tok_s:.1f} tok/s{prompt} | decode {_num(f.decode_tok_s, '.1f')} tok/s"
    )
    if f.accept_length is not None:
        line += f" | accept {f.accept_length:.2f}"
    if f.cycle_ms is not None:
        line += " | " + cycle_text(f.cycle_ms, f.cycle_source)
    return line


def cycle_text(cycle_ms: float, source: str | None) -> str:
    """`cycle 27.6 ms`, saying where the steps came from when the stream's chunks are not steps
    (llama.cpp: one chunk per token, steps from its `timings` counters)."""
    text = f"cycle {cycle_ms:.1f} ms"
    return text + " (steps from server timings)" if source == "timings" else text


def _num(value: float | None, fmt: str) -> str:
    return DASH if value is None else format(value, fmt)


def summary_lines(snapshot: Snapshot) -> list[str]:
    """The pooled figures (the one statistic), then each figure's median [min–max] and spread
    over the runs."""
    rows: list[tuple[str, Callable[[RunFigures], float | None], str, str]] = [
        ("decode", lambda r: r.decode_tok_s, ".1f", "tok/s"),
        ("e2e", lambda r: r.e2e_tok_s, ".1f", "tok/s"),
        ("TTFT", lambda r: r.ttft_ms, ".1f", "ms"),
        ("accept", lambda r: r.accept_length, ".2f", ""),
        ("server accept", lambda r: r.server_accept_length, ".2f", ""),
        ("cycle", lambda r: r.cycle_ms, ".1f", "ms"),
        ("cycle p95", lambda r: r.cycle_ms_p95, ".1f", "ms"),
    ]
    n = len(snapshot.runs)
    pooled = Measured(pool(snapshot.runs))
    accept = ACCEPT.written(pooled)
    lines = [
        f"Pooled over {counted(n, 'run')} (Σ tokens / Σ time, what comparisons use): "
        f"decode {DECODE.written(pooled) or DASH} {DECODE.unit}"
        + (f", accept {accept}" if accept is not None else "")
        + (f", cycle {CYCLE.shown(pooled)}" if CYCLE.get(pooled) is not None else ""),
        "Per run: median [min–max], spread",
    ]
    for name, get, fmt, unit in rows:
        values = [v for r in snapshot.runs if (v := get(r)) is not None]
        if not values:
            continue
        s = summarize(values)
        spread = f"±{s.stdev / s.mean:.1%} sd" if s.stdev is not None and s.mean else "1 run"
        lines.append(
            f"  {name:<13} {format(s.median, fmt):>8} {unit:<5} "
            f"[{format(s.min, fmt)}–{format(s.max, fmt)}]  {spread}"
        )
    conditions = one_liner(conditions_of(r.conditions for r in snapshot.runs))
    if conditions is not None:  # what a comparison with these runs will hold against them
        lines.append(f"Conditions: ran {conditions}")
    return lines


def category_line(category: str, snapshot: Snapshot, snapshot_id: int | None) -> str:
    """`  code: decode 412.5 tok/s, accept 3.10 (snapshot 7)`: one category's runs, pooled
    (`bench --probe-prompts`)."""
    pooled = Measured(pool(snapshot.runs))
    speed = DECODE.shown(pooled) if DECODE.get(pooled) else "no decode figure"
    accept = ACCEPT.written(pooled)
    accept_text = f", accept {accept}" if accept is not None else ""
    return f"  {category}: decode {speed}{accept_text} (snapshot {snapshot_id})"


def target_line(info: ServerInfo) -> str:
    """`SGLang 0.5.23 · model · tp 8 · EAGLE3 steps=2 …` for the bench header."""
    spec = info.speculative.describe() if info.speculative else "no speculation"
    parts = [info.title, info.model or "?"]
    if info.tp_size is not None:
        parts.append(f"tp {info.tp_size}")
    parts.append(spec)
    return " · ".join(parts)
