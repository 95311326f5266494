"""The decode model: how long steps take and how many drafts a verify accepts. Pure and seeded.

Speculation is modelled the way EAGLE chains behave: draft position i is accepted only if every
earlier one was, each with the same probability p. With D tokens verified per step (the root plus
D-1 drafts) a step yields j accepted drafts plus the bonus token, so its mean token count is
1 + p + ... + p^(D-1); p is solved so that this equals the configured accept length.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from specmon.sim.config import SimConfig

# Words the simulated model "generates"; one token each, so text length follows token count.
_WORDS = (
    "the model drafts tokens and verifies them in one pass so each step can accept several at"
    " once while baseline decode emits just a single token per forward of target speculation"
    " pays off when acceptance beats break-even length"
)
_VOCAB = tuple(_WORDS.split())
_FIRST_TOKEN_ID = 1000


def acceptance_distribution(accept_length: float, num_draft_tokens: int) -> tuple[float, ...]:
    """P(j drafts accepted) for j = 0 .. D-1 with a chained per-position acceptance p.

    Args:
        accept_length: Wanted mean tokens per verify step, bonus included, in [1, D].
        num_draft_tokens: D, tokens verified per step (root + D-1 drafts).

    Returns:
        D probabilities summing to 1 whose mean of (j + 1) is `accept_length`.
    """
    d = num_draft_tokens
    if d <= 1:
        return (1.0,)
    target = min(max(accept_length, 1.0), float(d))

    def mean_tokens(p: float) -> float:
        return sum(p**i for i in range(d))

    lo, hi = 0.0, 1.0
    # Bisection: mean_tokens is increasing in p on [0, 1]; 100 rounds is far below float eps.
    for _ in range(100):
        mid = (lo + hi) / 2
        if mean_tokens(mid) < target:
            lo = mid
        else:
            hi = mid
    p = (lo + hi) / 2
    probs = [p**j * (1 - p) for j in range(d - 1)]
    probs.append(p ** (d - 1))
    return tuple(probs)


def distribution_by_position(rates: Sequence[float]) -> tuple[float, ...]:
    """P(j drafts accepted), j = 0 .. len(rates), from a_i = P(position i accepted).

    Position i is accepted only with every earlier one, so P(j) = a_{j−1} − a_j (a_{−1} = 1)
    and P(all) = the last a_i.
    """
    shares = (1.0, *rates)
    return (*(shares[j] - shares[j + 1] for j in range(len(rates))), shares[-1])


def mean_tokens_per_step(probs: Sequence[float]) -> float:
    """Expected tokens per verify step (accepted drafts + bonus) under `probs`."""
    return sum((j + 1) * pj for j, pj in enumerate(probs))


def request_rng(seed: int, epoch: int, index: int) -> random.Random:
    """The acceptance RNG of one request: independent of what other requests draw."""
    return random.Random(f"specmon-sim:{seed}:{epoch}:{index}")


def request_id(seed: int, epoch: int, index: int) -> str:
    """A 32-hex request id like SGLang's `uuid4().hex`, but reproducible."""
    return hashlib.sha256(f"rid:{seed}:{epoch}:{index}".encode()).hexdigest()[:32]


def token_id(index: int, position: int) -> int:
    """The id of the token at `position` of request `index` (deterministic, no RNG)."""
    return _FIRST_TOKEN_ID + (index * 7 + position * 13) % len(_VOCAB)


def token_text(tid: int) -> str:
    """The text of token `tid` (a leading space and a word)."""
    return " " + _VOCAB[(tid - _FIRST_TOKEN_ID) % len(_VOCAB)]


def count_prompt_tokens(text: object = None, input_ids: object = None) -> int:
    """Prompt tokens: `len(input_ids)`, else whitespace-separated words of `text` (at least 1)."""
    if isinstance(input_ids, list):
        return max(1, len(input_ids))
    if isinstance(text, str):
        return max(1, len(text.split()))
    return 1


@dataclass(frozen=True)
class DecodeModel:
    """Step durations and acceptance draws of the simulated engine.

    Attributes:
        speculative: Whether each step is a draft+verify cycle.
        num_draft_tokens: D, tokens verified per cycle (1 without speculation).
        plain_step_ms: Plain decode step for a batch of one.
        cycle_ms: Draft+verify cycle for a batch of one.
        probs: P(j accepted drafts), j = 0 .. D-1.
        probs_by_category: `probs` of a prompt of each category (`SimConfig.accept_by_category`).
        ttft_ms: Prefill time with nothing to compute (fully cached prompt).
        prefill_ms_per_token: Extra prefill time per uncached prompt token.
        concurrency_slowdown: k in step x (1 + k (n - 1)).
    """

    speculative: bool
    num_draft_tokens: int
    plain_step_ms: float
    cycle_ms: float
    probs: tuple[float, ...]
    ttft_ms: float
    prefill_ms_per_token: float
    concurrency_slowdown: float
    probs_by_category: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: SimConfig) -> DecodeModel:
        """The model a `SimConfig` describes."""
        d = config.num_draft_tokens
        probs: tuple[float, ...] = (1.0,)
        by_category: dict[str, tuple[float, ...]] = {}
        if config.speculative and config.accept_by_position is not None:
            probs = distribution_by_position(config.accept_by_position)
        elif config.speculative:
            probs = acceptance_distribution(config.accept_length_used, d)
            by_category = {
                category: acceptance_distribution(config.accept_length_of(category), d)
                for category in config.accept_by_category
            }
        return cls(
            speculative=config.speculative,
            num_draft_tokens=d,
            plain_step_ms=config.plain_step_ms,
            cycle_ms=config.cycle_ms,
            probs=probs,
            ttft_ms=config.ttft_ms,
            prefill_ms_per_token=config.prefill_ms_per_token,
            concurrency_slowdown=config.concurrency_slowdown,
            probs_by_category=by_category,
        )

    def step_ms(self, running: int, drafts: int | None = None) -> float:
        """Duration of one decode step (or draft+verify cycle) with `running` requests batched.

        `drafts` (adaptive mode): the draft length this step runs; the cycle's draft and verify
        share grows with it in proportion, so a step drafting none lasts a plain step (SGLang
        keeps its draft-extend pass at 0 steps; that cost is not modelled). None: the full one.
        """
        base = self.plain_step_ms
        full = self.num_draft_tokens - 1
        if self.speculative:
            share = 1.0 if drafts is None or full <= 0 else drafts / full
            base += (self.cycle_ms - self.plain_step_ms) * share
        return base * (1 + self.concurrency_slowdown * max(running - 1, 0))

    def prefill_ms(self, uncached_tokens: int) -> float:
        """Duration of one prefill batch that computes `uncached_tokens` prompt tokens."""
        return self.ttft_ms + self.prefill_ms_per_token * max(uncached_tokens, 0)

    def draw_accepted(self, rng: random.Random, category: str | None = None) -> int:
        """Accepted drafts in one verify step (0 .. D-1) of a request whose prompt is of
        `category` (None: none matched); always 0 without speculation."""
        if not self.speculative:
            return 0
        probs = self.probs_by_category.get(category or "", self.probs)
        u = rng.random()
        acc = 0.0
        for j, pj in enumerate(probs):
            acc += pj
            if u < acc:
                return j
        return len(probs) - 1

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per step for a request (the configured accept length, or 1)."""
        return mean_tokens_per_step(self.probs)
