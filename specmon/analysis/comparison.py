"""A speculative set of runs against a baseline: speedup with its interval, break-even, margin
and the verdict. The only place these figures are computed; every surface shows these.

Both sides are `Pooled` (analysis/pooled.py), so with the same runs

    accept / break-even = (1000 · accept / cycle) / base tok/s = now tok/s / base tok/s,

that is, the margin has the speedup's sign exactly, and the verdict, read off the speedup's
interval, never contradicts either.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from specmon.analysis.pooled import Pooled
from specmon.analysis.stats import t_quantile


class Verdict(StrEnum):
    """What the comparison says, uncertainty included."""

    WINNING = "winning"
    """The whole 95% interval of the speedup is above 0 (or, without one, the speedup is)."""
    LOSING = "losing"
    """The whole interval is below 0 (or, without one, the speedup is)."""
    WITHIN_NOISE = "within noise"
    """The interval holds 0: this many runs cannot tell."""


def break_even(cycle_ms: float, base_tok_s: float) -> float:
    """The accept length above which speculation wins: cycle / baseline ms per token.

    docs/design.md §1: 29.9 ms / 11.1 ms = 2.69; with the true baseline, 29.9 / 15.9 = 1.88.
    """
    if base_tok_s <= 0:
        raise ValueError("baseline tok/s must be positive")
    return cycle_ms * base_tok_s / 1000


CONFIDENCE = 0.95
"""The level of every interval shown, unless a sequential rule spends its error over looks
(`check`, analysis/sequential.py)."""

TENTATIVE_ROUNDS = 3
"""A managed A/B's verdict from fewer rounds is marked tentative: two rounds give the rounds'
spread one degree of freedom."""


@dataclass(frozen=True, slots=True)
class SpreadPrior:
    """What one run of a kind of server is taken to vary by before its own runs can say: the
    floor under a side's run-to-run spread (docs/metrics.md, "Comparison figures")."""

    cv: float
    """Relative standard deviation of one run's decode tok/s (0.035 = 3.5%)."""
    weight: float
    """How many runs' worth of spread it counts as, pooled with a side's own runs (its degrees
    of freedom)."""
    kind: str
    """What server it describes: "speculative", "plain"."""


SPECULATIVE_SPREAD = SpreadPrior(0.035, 20.0, "speculative")
"""A speculative server's runs of the protocol vary ~3.5% from one to the next (as seen on real
servers: the acceptance of each run's text moves its speed), a plain server's ~0.4%."""
PLAIN_SPREAD = SpreadPrior(0.004, 20.0, "plain")
"""A plain server's runs: ~0.4% (docs/compatibility.md: a plain SGLang's runs on an H200 were
within ±0.4%)."""


@dataclass(frozen=True, slots=True)
class Speedup:
    """now / base − 1, with its interval at `level` (None only where no side's spread can be
    known or assumed: a managed A/B's single round is the runs', which always have one)."""

    value: float
    low: float | None
    high: float | None
    level: float = CONFIDENCE
    now_runs: int = 0
    """How many runs (probes) the `now` side pools; 0 where not told."""
    assumed: float | None = None
    """The speculative side's run-to-run spread taken where its own runs show less or cannot
    show one (one probe): the prior's cv (`SPECULATIVE_SPREAD`); None where the runs' own
    spread was used as is."""

    @property
    def one_probe(self) -> bool:
        """From a single probe: its spread assumed, never measured."""
        return self.now_runs == 1


@dataclass(frozen=True, slots=True)
class RoundSpread:
    """The rounds of a managed A/B, each its own comparison.

    `specmon ab` relaunches both servers every round, and a server's speed moves from one launch
    to the next by more than one launch's runs show (two launches of the same plain server ran
    339 and 203 tok/s on an H200). A round is therefore the unit that repeats: each gives its own
    log speedup d_r, whose spread between rounds holds the runs' noise and the launches' alike.
    """

    speedups: tuple[float, ...]
    """Each round's own speedup (now_r / base_r − 1), in round order."""

    @property
    def rounds(self) -> int:
        return len(self.speedups)

    @property
    def variance(self) -> float | None:
        """s_d² / R, the variance of the mean log speedup from the rounds' own spread; None
        with one round (nothing to estimate it from)."""
        if self.rounds < 2:
            return None
        return statistics.variance([math.log1p(g) for g in self.speedups]) / self.rounds

    @property
    def tentative(self) -> bool:
        """Fewer than `TENTATIVE_ROUNDS` rounds: a verdict to confirm with more."""
        return self.rounds < TENTATIVE_ROUNDS


def round_spread(rounds: Sequence[tuple[Pooled, Pooled]]) -> RoundSpread | None:
    """The rounds' speedups from their (now, base) pairs; None when no round has a decode
    tok/s on both sides."""
    speedups = tuple(
        now.decode_tok_s / base.decode_tok_s - 1
        for now, base in rounds
        if now.decode_tok_s and base.decode_tok_s
    )
    return RoundSpread(speedups) if speedups else None


def speedup(
    now: Pooled,
    base: Pooled,
    spread: RoundSpread | None = None,
    level: float = CONFIDENCE,
) -> Speedup | None:
    """The speedup of `now` over `base`, with its interval at `level`; None when either has no
    decode tok/s.

    From the runs: the delta method on the log ratio, log R ± t · sqrt(c_now² / n_now +
    c_base² / n_base), c a side's run-to-run relative spread (`side_spread`: its runs' own,
    never below a prior for its kind of server pooled in, so that one probe, with no spread of
    its own, still varies as a speculative server's runs do), Welch–Satterthwaite degrees of
    freedom.

    From the rounds (`spread`, two or more): log R ± t(R − 1) · s_d / √R, s_d the standard
    deviation of the rounds' log speedups; each round's runs and launches are in it, and with
    R − 1 degrees of freedom two rounds give a wide interval, as they should (one degree of
    freedom). One round: the runs' interval.
    """
    if not now.decode_tok_s or not base.decode_tok_s:
        return None
    ratio = now.decode_tok_s / base.decode_tok_s
    quantile = (1 + level) / 2
    between = spread.variance if spread is not None else None
    if spread is not None and between is not None:
        t = t_quantile(quantile, spread.rounds - 1)
        return _interval(ratio, between, t, level, now.runs, None)
    now_cv, now_df, widened = side_spread(now, SPECULATIVE_SPREAD)
    base_prior = SPECULATIVE_SPREAD if base.accept_length is not None else PLAIN_SPREAD
    base_cv, base_df, _ = side_spread(base, base_prior)
    # (variance of the side's mean, degrees of freedom) of each part of the log ratio's.
    parts = [
        (now_cv * now_cv / max(now.runs, 1), now_df),
        (base_cv * base_cv / max(base.runs, 1), base_df),
    ]
    variance = sum(v for v, _ in parts)
    t = t_quantile(quantile, _satterthwaite_df(parts))
    assumed = SPECULATIVE_SPREAD.cv if widened else None
    return _interval(ratio, variance, t, level, now.runs, assumed)


def side_spread(side: Pooled, prior: SpreadPrior) -> tuple[float, float, bool]:
    """(c, degrees of freedom, whether the prior widened it): one side's run-to-run relative
    spread.

    c_obs = rel_se · √n, the runs' own (none with one run). Where the runs spread less than
    the prior, they are pooled with it as `prior.weight` runs' worth: c² = (ν₀ · c₀² +
    (n − 1) · c_obs²) / (ν₀ + n − 1), with ν₀ + n − 1 degrees of freedom. Where they spread
    more, their own c_obs (the prior only ever widens an interval), its degrees of freedom
    Welch–Satterthwaite's over the prior's part c₀² and the excess c_obs² − c₀² the runs show
    beyond it: c⁴ / (c₀⁴ / (ν₀ + n − 1) + (c_obs² − c₀²)² / (n − 1)), from ν₀ + n − 1 where they
    spread as the prior says down to n − 1 where they spread far more (a noisier server than
    the prior knows: its runs alone can say how much). One run: c₀, ν₀ degrees of freedom.
    """
    n = max(side.runs, 1)
    df = prior.weight + n - 1
    floor = prior.cv * prior.cv
    if side.rel_se is None or n < 2:
        return prior.cv, df, True
    own = side.rel_se * side.rel_se * n
    if own > floor:
        excess = own - floor
        return math.sqrt(own), own * own / (floor * floor / df + excess * excess / (n - 1)), False
    return math.sqrt((prior.weight * floor + (n - 1) * own) / df), df, True


def _interval(
    ratio: float, variance: float, t: float, level: float, runs: int, assumed: float | None
) -> Speedup:
    """ratio − 1 with the interval ratio · exp(± t · sqrt(variance)) − 1."""
    half = t * math.sqrt(variance)
    low, high = ratio * math.exp(-half) - 1, ratio * math.exp(half) - 1
    return Speedup(ratio - 1, low, high, level, runs, assumed)


def _satterthwaite_df(parts: Sequence[tuple[float, float]]) -> float:
    """(Σ v)² / Σ (v² / df): Welch–Satterthwaite's for a sum of variance estimates."""
    denominator = sum(v * v / df for v, df in parts)
    return (
        sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else sum(d for _, d in parts)
    )


def verdict(gain: Speedup) -> Verdict:
    """Winning or losing when the interval (or, without one, the value) says so; else noise."""
    low = gain.value if gain.low is None else gain.low
    high = gain.value if gain.high is None else gain.high
    if low > 0:
        return Verdict.WINNING
    if high < 0:
        return Verdict.LOSING
    return Verdict.WITHIN_NOISE


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every figure of one comparison, as every surface shows it."""

    base_tok_s: float
    now_tok_s: float
    speedup: Speedup
    verdict: Verdict
    break_even: float | None
    """Accept length at which `now`'s cycle would match the baseline; None without a cycle."""
    margin: float | None
    """now's accept length − break-even; same sign as the speedup."""
    spread: RoundSpread | None = None
    """The rounds of a managed A/B the interval comes from; None outside one."""

    @property
    def tentative(self) -> bool:
        """A managed A/B's verdict from fewer than `TENTATIVE_ROUNDS` rounds."""
        return self.spread is not None and self.spread.tentative

    @property
    def accept_length(self) -> float | None:
        """now's accept length, which break-even and the margin were taken from; None without
        a cycle."""
        if self.break_even is None or self.margin is None:
            return None
        return self.break_even + self.margin


def compare(
    now: Pooled,
    base: Pooled,
    spread: RoundSpread | None = None,
    level: float = CONFIDENCE,
) -> Comparison | None:
    """Compare two pooled run sets; None when either lacks a decode tok/s. `spread`: the
    rounds when the sets pool the rounds of a managed A/B (`round_spread`); `level`: the
    interval's confidence."""
    gain = speedup(now, base, spread, level)
    if gain is None or now.decode_tok_s is None or base.decode_tok_s is None:
        return None
    be = break_even(now.cycle_ms, base.decode_tok_s) if now.cycle_ms is not None else None
    margin = now.accept_length - be if be is not None and now.accept_length is not None else None
    return Comparison(base.decode_tok_s, now.decode_tok_s, gain, verdict(gain), be, margin, spread)
