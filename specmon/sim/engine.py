"""The simulated scheduler: one batch loop paced by the decode model on absolute deadlines.

Like SGLang's scheduler, a loop alternates prefill batches (every request that arrived) and decode
steps (every running request advances one step, or one draft+verify cycle). Each step ends at
`cursor + duration`, the loop sleeps until that deadline on the event loop's clock, so timing never
drifts: what clients observe is the model's timing plus only the wake-up latency of asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Protocol

from specmon.sim.categories import classify_prompt
from specmon.sim.config import Flavor, SimConfig
from specmon.sim.decode import DecodeModel, request_id, request_rng, token_id, token_text
from specmon.sim.faults import Faults
from specmon.sim.record import EmittedRequest

# SGLang streams non-streaming requests internally every SGLANG_FORCE_STREAM_INTERVAL tokens;
# that is the granularity at which its tokenizer observes their inter-token latency.
_NON_STREAM_INTERVAL = 50
ENDLESS = 1 << 40
"""The length of a request under `Faults.endless_stream`: it never finishes."""
PREFIX_CACHE_PROMPTS = 1000
"""Prompts the simulated prefix cache remembers (the oldest is evicted first)."""


@dataclass(frozen=True)
class StepOut:
    """One output of a request the handler may turn into a chunk.

    Attributes:
        deadline: Model time (event-loop clock) at which the output is due.
        completion_tokens: Cumulative tokens at that point.
        finished: Whether this is the final output.
    """

    deadline: float
    completion_tokens: int
    finished: bool


@dataclass(eq=False)
class SimRequest:
    """A request inside the simulated engine: its inputs, progress and timestamps."""

    index: int
    rid: str
    stream: bool
    prompt_tokens: int
    cached_tokens: int
    max_new_tokens: int
    emit_interval: int
    rng: random.Random
    arrival: float
    record: EmittedRequest
    category: str | None = None
    """What its prompt reads as (`sim.categories`): its acceptance odds."""
    outbox: asyncio.Queue[StepOut | None] = field(default_factory=asyncio.Queue)
    token_ids: list[int] = field(default_factory=list)
    verify_ct: int = 0
    correct_drafts: int = 0
    histogram: list[int] = field(default_factory=list)
    forward_entry: float = 0.0
    prefill_finished: float = 0.0
    first_token: float = 0.0
    finished_at: float = 0.0
    last_emit: float = 0.0
    last_emit_tokens: int = 0
    finished: bool = False
    aborted: bool = False
    recorded: bool = False
    """Its ground truth is stored (`SimState.finish_record`, once)."""

    @property
    def completion_tokens(self) -> int:
        """Tokens generated so far (the first one comes from prefill)."""
        return len(self.token_ids)

    def text(self, upto: int | None = None) -> str:
        """The detokenized output (first `upto` tokens)."""
        return "".join(token_text(t) for t in self.token_ids[:upto])


class EngineHooks(Protocol):
    """What the engine tells a server's metrics about (each backend counts its own way)."""

    def on_prefill_start(self, batch: list[SimRequest], start: float, end: float) -> None:
        """A prefill batch runs from `start` to `end` (model time)."""

    def on_first_token(self, req: SimRequest) -> None:
        """The prefill produced the first token of `req`."""

    def on_verify(self, req: SimRequest, drafted: int, accepted: int) -> None:
        """A verify step of `req` took `accepted` of `drafted` draft tokens."""

    def on_decode_step(
        self,
        engine: Engine,
        *,
        tokens: int,
        emitted: int,
        batch_size: int,
        correct_drafts: int,
        now: float,
    ) -> None:
        """A decode step ended at `now`: `tokens` accepted, `emitted` within requests' limits."""

    def on_output(self, req: SimRequest, interval: float, new_tokens: int) -> None:
        """An output of `new_tokens` reached the front end `interval` s after the previous one."""

    def on_finish(self, req: SimRequest) -> None:
        """`req` finished."""

    def on_abort(self, req: SimRequest) -> None:
        """`req` was aborted (its client went away)."""


class Engine:
    """Admits requests, runs the batch loop, and tells its hooks what happened."""

    def __init__(
        self,
        config: SimConfig,
        flavor: Flavor,
        observer: EngineHooks,
        epoch: int,
        faults: Faults | None = None,
    ) -> None:
        self.config = config
        self.faults = faults or Faults()
        self.flavor = flavor
        self.model = DecodeModel.from_config(config)
        self.observer = observer
        self.epoch = epoch
        self.waiting: list[SimRequest] = []
        self.running: list[SimRequest] = []
        self._counter = itertools.count()
        self._prompts_seen: dict[str, None] = {}  # insertion-ordered: the oldest goes first
        self._wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._cursor = loop.time()
        # Wall time of the event-loop clock's zero: turns model deadlines into unix timestamps.
        self.wall_offset = time.time() - loop.time()
        self._task: asyncio.Task[None] | None = None
        self.active_drafts = config.drafts_at(1) if config.speculative else 0
        """The draft length of the latest decode step (adaptive mode: by its batch size)."""

    def now(self) -> float:
        """The event-loop clock (monotonic seconds)."""
        return self._loop.time()

    @property
    def model_time(self) -> float:
        """The end of the latest step (event-loop clock): under a loaded CPU the model runs
        behind the clock, so ground truth up to a moment is the steps up to this time."""
        return self._cursor

    def wall(self, mono: float) -> float:
        """Unix time of event-loop time `mono` (as the server's clock says: it may jump)."""
        return mono + self.wall_offset + self.faults.clock_jump_s

    def start(self) -> None:
        """Start the batch loop task."""
        self._task = asyncio.create_task(self._run(), name="specmon-sim-engine")

    async def stop(self) -> None:
        """Stop the loop and release every waiting handler (they see the server go away)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for req in [*self.waiting, *self.running]:
            req.aborted = True
            self._settle(req, "abort")
            req.outbox.put_nowait(None)
        self.waiting.clear()
        self.running.clear()

    def new_request(
        self,
        *,
        endpoint: str,
        stream: bool,
        prompt_tokens: int,
        prompt_key: str,
        max_new_tokens: int,
        stream_interval: int | None,
        text: str = "",
    ) -> SimRequest:
        """Create a request (not yet admitted).

        Args:
            endpoint: The route it came in on (for the record).
            stream: Whether the client streams.
            prompt_tokens: Prompt length in tokens.
            prompt_key: Identity of the prompt for the prefix cache.
            max_new_tokens: Tokens to generate (always reached: EOS is not modelled).
            stream_interval: Per-request override of `--stream-interval`.
            text: The prompt's text, which its category is read from ("" for token ids).
        """
        index = next(self._counter)
        arrival = self.now()
        # The radix cache keeps a prompt seen before; SGLang still recomputes its last token.
        cached = prompt_tokens - 1 if prompt_key in self._prompts_seen else 0
        self._prompts_seen[prompt_key] = None
        if len(self._prompts_seen) > PREFIX_CACHE_PROMPTS:
            del self._prompts_seen[next(iter(self._prompts_seen))]
        interval = stream_interval or self.config.stream_interval
        rid = request_id(self.config.seed, self.epoch, index)
        category = classify_prompt(text)
        record = EmittedRequest(
            rid=rid,
            endpoint=endpoint,
            stream=stream,
            epoch=self.epoch,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached,
            max_new_tokens=max_new_tokens,
            arrival_mono=arrival,
            arrival_wall=self.wall(arrival),
            category=category,
        )
        return SimRequest(
            index=index,
            rid=rid,
            stream=stream,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached,
            max_new_tokens=ENDLESS if self.faults.endless_stream else max(1, max_new_tokens),
            emit_interval=interval if stream else _NON_STREAM_INTERVAL,
            rng=request_rng(self.config.seed, self.epoch, index),
            arrival=arrival,
            record=record,
            category=category,
            histogram=[0] * self.model.num_draft_tokens,
        )

    def submit(self, req: SimRequest) -> None:
        """Queue a request for the next prefill batch."""
        self.waiting.append(req)
        self._wake.set()

    def abort(self, req: SimRequest) -> None:
        """Drop a request whose client went away (SGLang aborts it too)."""
        if req.finished or req.aborted:
            return
        req.aborted = True
        for queue in (self.waiting, self.running):
            if req in queue:
                queue.remove(req)
        self._settle(req, "abort")
        self.observer.on_abort(req)

    def flush_cache(self) -> bool:
        """Drop the prefix cache (only when idle); True when it was dropped."""
        if self.waiting or self.running:
            return False
        self._prompts_seen.clear()
        return True

    @property
    def busy(self) -> bool:
        """Whether any request is waiting or running."""
        return bool(self.waiting or self.running)

    async def _sleep_until(self, deadline: float) -> None:
        delay = deadline - self.now()
        await asyncio.sleep(delay if delay > 0 else 0)

    async def _run(self) -> None:
        while True:
            if not self.waiting and not self.running:
                self._wake.clear()
                await self._wake.wait()
                if not self.waiting:
                    continue
                # An idle engine starts work when the request arrives, not at its last deadline.
                self._cursor = max(self._cursor, min(r.arrival for r in self.waiting))
            if self.waiting:
                await self._prefill()
            elif self.running:
                await self._decode()

    async def _prefill(self) -> None:
        batch, self.waiting = self.waiting, []
        start = self._cursor
        uncached = sum(r.prompt_tokens - r.cached_tokens for r in batch)
        self._cursor = start + self.model.prefill_ms(uncached) / 1000
        for req in batch:
            req.forward_entry = start
        self.observer.on_prefill_start(batch, start, self._cursor)
        await self._sleep_until(self._cursor)
        for req in batch:
            if req.aborted:
                continue
            req.prefill_finished = req.first_token = self._cursor
            self.observer.on_first_token(req)
            self._produce(req, 1, self._cursor)
            if not req.finished:
                self.running.append(req)

    async def _decode(self) -> None:
        batch = list(self.running)
        adaptive = self.config.adaptive_drafts is not None
        if self.model.speculative:
            self.active_drafts = self.config.drafts_at(len(batch))
        drafts = self.active_drafts if adaptive else None
        self._cursor += self.model.step_ms(len(batch), drafts) / 1000
        await self._sleep_until(self._cursor)
        produced = emitted = correct = 0
        stepped = 0
        for req in batch:
            if req.aborted:
                continue
            accepted = self.model.draw_accepted(req.rng, req.category)
            remaining = req.max_new_tokens - req.completion_tokens
            drafted = self._draft_length(remaining)
            # A shorter draft than the chain's: the positions past it are never proposed.
            accepted = min(accepted, drafted)
            req.record.step_drafts.append(drafted)
            if drafted:
                req.verify_ct += 1
                req.correct_drafts += accepted
                req.histogram[accepted] += 1
                req.record.step_drafted.append(drafted)
                req.record.step_accepted.append(accepted)
                self.observer.on_verify(req, drafted, accepted)
            self._produce(req, min(accepted + 1, remaining), self._cursor)
            # The scheduler counts what the GPU accepted, even past max_new_tokens.
            produced += accepted + 1
            emitted += min(accepted + 1, remaining)
            correct += accepted
            stepped += 1
        self.running = [r for r in self.running if not r.finished and not r.aborted]
        self.observer.on_decode_step(
            self,
            tokens=produced,
            emitted=emitted,
            batch_size=stepped,
            correct_drafts=correct,
            now=self._cursor,
        )

    def _draft_length(self, remaining: int) -> int:
        """Draft tokens a verify step proposes (0: a plain decode step).

        llama-server shortens the draft to the tokens the request has left, minus the one the
        target adds, and skips drafting when none is left; SGLang and vLLM draft the step's
        length in full (`active_drafts`: by batch size in adaptive mode).
        """
        if not self.model.speculative:
            return 0
        drafted = self.active_drafts
        return min(drafted, remaining - 1) if self.config.backend == "llamacpp" else drafted

    def _produce(self, req: SimRequest, n: int, deadline: float) -> None:
        start = req.completion_tokens
        req.token_ids.extend(token_id(req.index, start + i) for i in range(n))
        req.record.step_tokens.append(n)
        req.record.step_deadlines.append(deadline)
        done = req.completion_tokens >= req.max_new_tokens
        unsent = req.completion_tokens - req.last_emit_tokens
        first = req.last_emit_tokens == 0
        if done or first or req.emit_interval == 1 or unsent >= req.emit_interval:
            if not first:
                self.observer.on_output(req, deadline - req.last_emit, unsent)
            req.last_emit, req.last_emit_tokens = deadline, req.completion_tokens
            if done:
                self._finish(req, deadline)
            req.outbox.put_nowait(StepOut(deadline, req.completion_tokens, done))

    def _finish(self, req: SimRequest, deadline: float) -> None:
        req.finished = True
        req.finished_at = deadline
        self._settle(req, "length")
        req.record.finished_mono = deadline
        self.observer.on_finish(req)

    @staticmethod
    def _settle(req: SimRequest, reason: str) -> None:
        """Copy the request's totals into its record (finished or cut short)."""
        rec = req.record
        rec.completion_tokens = req.completion_tokens
        rec.verify_ct = req.verify_ct
        rec.correct_drafts = req.correct_drafts
        rec.finish_reason = reason
