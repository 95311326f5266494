"""Plain-text rendering of bench runs and summaries (the CLI's human output)."""

from __future__ import annotations

from collections.abc import Callable

from specmon.analysis.catalogue import Figure, Measured, figure
from specmon.analysis.conditions import conditions_of, one_liner
from specmon.analysis.pooled import pool
from specmon.analysis.stats import summarize
from specmon.model import RunFigures, ServerInfo, Snapshot
from specmon.wording import counted

DASH = "—"
DECODE, ACCEPT, CYCLE = figure("decode tok/s"), figure("accept length"), figure("cycle")
TTFT = figure("TTFT")


def run_line(index: int, total: int, f: RunFigures, phase: str = "Run") -> str:
    """`Run 1/5: 500 tokens in 7.94s = 63.0 tok/s (prompt: 32 toks) | decode 63.4 tok/s | …`."""
    prompt = f" (prompt: {f.prompt_tokens} toks)" if f.prompt_tokens is not None else ""
    line = (
        f"{phase} {index}/{total}: {f.completion_tokens} tokens in {f.e2e_s:.2f}s = "
        f"{f.e2e_tok_s:.1f} tok/s{prompt} | decode "
        f"{DECODE.value_text(f.decode_tok_s, unit=False)} {DECODE.unit}"
    )
    if f.accept_length is not None:
        line += f" | accept {ACCEPT.format(f.accept_length)}"
    if f.cycle_ms is not None:
        line += " | " + cycle_text(f.cycle_ms, f.cycle_source)
    return line


def cycle_text(cycle_ms: float, source: str | None) -> str:
    """`cycle 27.6 ms`, saying where the steps came from when the stream's chunks are not steps
    (llama.cpp: one chunk per token, steps from its `timings` counters)."""
    text = f"cycle {CYCLE.value_text(cycle_ms)}"
    return text + " (steps from server timings)" if source == "timings" else text


def summary_lines(snapshot: Snapshot) -> list[str]:
    """The pooled figures (the one statistic), then each figure's median [min–max] and spread
    over the runs, each to its catalogued figure's digits (the server's accept length and the
    cycle's p95 to accept length's and cycle's)."""
    rows: list[tuple[str, Callable[[RunFigures], float | None], Callable[[float], str], str]] = [
        ("decode", lambda r: r.decode_tok_s, _digits(DECODE), DECODE.unit),
        ("e2e", lambda r: r.e2e_tok_s, _e2e, "tok/s"),
        ("TTFT", lambda r: r.ttft_ms, _digits(TTFT), TTFT.unit),
        ("accept", lambda r: r.accept_length, _digits(ACCEPT), ""),
        ("server accept", lambda r: r.server_accept_length, _digits(ACCEPT), ""),
        ("cycle", lambda r: r.cycle_ms, _digits(CYCLE), CYCLE.unit),
        ("cycle p95", lambda r: r.cycle_ms_p95, _digits(CYCLE), CYCLE.unit),
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
    for name, get, write, unit in rows:
        values = [v for r in snapshot.runs if (v := get(r)) is not None]
        if not values:
            continue
        s = summarize(values)
        spread = f"±{s.stdev / s.mean:.1%} sd" if s.stdev is not None and s.mean else "1 run"
        lines.append(
            f"  {name:<13} {write(s.median):>8} {unit:<5} [{write(s.min)}–{write(s.max)}]  {spread}"
        )
    conditions = one_liner(conditions_of(r.conditions for r in snapshot.runs))
    if conditions is not None:  # what a comparison with these runs will hold against them
        lines.append(f"Conditions: ran {conditions}")
    return lines


def _digits(figure: Figure) -> Callable[[float], str]:
    """A value written to `figure`'s digits, without its unit (the row's column names it)."""
    return lambda value: figure.value_text(value, unit=False)


def _e2e(tok_s: float) -> str:
    """e2e tok/s (prefill included): no catalogued figure, one decimal like decode's."""
    return f"{tok_s:.1f}"


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
