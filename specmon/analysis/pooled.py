"""The one statistic of a set of runs: pooled tokens over pooled time (docs/metrics.md).

Every surface states a set of runs (a baseline's, a snapshot's, the dashboard's recent probes)
with these figures and nothing else:

- decode tok/s = Σ decode tokens / Σ decode seconds
- accept length = Σ decode tokens / Σ verify steps
- cycle = Σ decode seconds / Σ verify steps
- TTFT = the mean of the runs' TTFT (every run: each has its first token's time)

so that, over the same runs, decode tok/s = 1000 · accept / cycle exactly, and a speed, a
speedup and a break-even built from them cannot disagree (`analysis.comparison`). Runs of equal
length weigh equally; a run cut short weighs by its time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specmon.model import RunFigures


@dataclass(frozen=True, slots=True)
class RunParts:
    """What one run adds to the pooled sums."""

    tokens: float
    """Decode tokens (c_last − c_0)."""
    seconds: float | None
    """Decode seconds (t_last − t_0); None when the run's timing is unusable."""
    steps: float | None
    """Verify steps after the first token; None without speculation."""


def run_parts(run: RunFigures) -> RunParts | None:
    """A run's decode tokens, seconds and steps (derived from its figures in older records)."""
    seconds = run.decode_s
    if seconds is None and run.decode_tok_s is not None and not run.buffered:
        seconds = run.e2e_s - run.ttft_ms / 1000
    tokens: float | None = run.decode_tokens
    if tokens is None and run.decode_tok_s is not None and seconds is not None:
        tokens = run.decode_tok_s * seconds
    if tokens is None or tokens <= 0:
        return None
    steps = run.decode_steps
    if steps is None and run.accept_length:
        steps = tokens / run.accept_length
    return RunParts(tokens, seconds if seconds and seconds > 0 else None, steps or None)


@dataclass(frozen=True, slots=True)
class Pooled:
    """The pooled figures of a set of runs."""

    runs: int
    """Runs whose timing is used (the speed's sample size)."""
    decode_tok_s: float | None
    rel_se: float | None
    """Relative standard error of `decode_tok_s` (ratio estimator); None with fewer than two
    timed runs."""
    accept_length: float | None
    cycle_ms: float | None
    accept_rel_se: float | None = None
    """Relative standard error of `accept_length` (the same ratio estimator over the runs'
    tokens and steps); None with fewer than two runs with steps."""
    ttft_ms: float | None = None
    """The mean of the runs' TTFT (ms, queueing and prefill included): every run given, timed
    or not, for each has its first token's time; None without runs. A plain mean, not a ratio
    of sums: each run is one request's wait, and every run weighs the same."""

    @property
    def ms_per_token(self) -> float | None:
        """1000 / decode tok/s (`ms_per_token`)."""
        return ms_per_token(self.decode_tok_s)


def ms_per_token(decode_tok_s: float | None) -> float | None:
    """Decode time per token in ms, 1000 / decode tok/s: for pooled runs (`Pooled`) and one run
    alike (the Decode panel's latest probe); None when the rate is unknown or 0."""
    return 1000 / decode_tok_s if decode_tok_s else None


def pool(runs: Sequence[RunFigures]) -> Pooled:
    """Pool a set of runs into one statistic per figure (module docstring).

    Accept length and cycle pool the timed runs with verify steps, so that they and decode
    tok/s describe the same runs; when no run is timed (buffered streams), accept length pools
    every run with steps.
    """
    parts = [p for run in runs if (p := run_parts(run)) is not None]
    timed = [p for p in parts if p.seconds is not None]
    tok_s = rel_se = None
    if timed:
        tokens = sum(p.tokens for p in timed)
        seconds = sum(p.seconds for p in timed if p.seconds is not None)
        tok_s = tokens / seconds
        rel_se = _ratio_rel_se([(p.tokens, p.seconds or 0.0) for p in timed], tok_s)
    stepped = [p for p in timed if p.steps] or [p for p in parts if p.steps]
    steps = sum(p.steps for p in stepped if p.steps)
    accept = sum(p.tokens for p in stepped) / steps if stepped else None
    timed_steps = [p for p in stepped if p.seconds is not None]
    cycle = None
    if timed_steps:
        cycle = (
            1000
            * sum(p.seconds for p in timed_steps if p.seconds is not None)
            / sum(p.steps for p in timed_steps if p.steps)
        )
    accept_se = None
    if accept is not None:
        accept_se = _ratio_rel_se([(p.tokens, p.steps or 0.0) for p in stepped], accept)
    ttft = sum(run.ttft_ms for run in runs) / len(runs) if runs else None
    return Pooled(len(timed), tok_s, rel_se, accept, cycle, accept_se, ttft)


def pool_groups(groups: Mapping[str, Sequence[RunFigures]]) -> dict[str, Pooled]:
    """Each group's runs pooled alone (per probe category): `pool` applied per group, so a
    category's figures mean what the set's do."""
    return {name: pool(runs) for name, runs in groups.items()}


def _ratio_rel_se(pairs: list[tuple[float, float]], ratio: float) -> float | None:
    """Relative standard error of Σy/Σx by linearisation: the residuals y − R·x of each run.

    var(R) ≈ Σ (y_i − R·x_i)² / (n (n − 1) x̄²), the standard ratio-estimator variance.
    """
    n = len(pairs)
    if n < 2 or ratio <= 0:
        return None
    mean_x = sum(x for _, x in pairs) / n
    residuals = sum((y - ratio * x) ** 2 for y, x in pairs)
    return math.sqrt(residuals / (n * (n - 1))) / mean_x / ratio
