"""Ground truth: what the simulator did for each request, kept in memory and optionally as JSONL."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class EmittedRequest:
    """One request as the simulator served it; filled in while it runs, final once recorded.

    Times ending in `_mono` are on the server's event-loop clock (`time.monotonic` for the
    default loop); `_wall` ones are unix seconds.

    Attributes:
        rid: Request id (`meta_info.id`, OpenAI `id`).
        endpoint: Route, e.g. "/generate" or "/v1/chat/completions".
        stream: Whether the response was streamed.
        epoch: Server lifetime it belongs to (0, then +1 per restart).
        prompt_tokens: Prompt length.
        cached_tokens: Prompt tokens served from the prefix cache.
        max_new_tokens: Requested output length.
        arrival_mono: When the engine admitted it.
        arrival_wall: Same, unix seconds.
        category: What its prompt reads as (`sim.categories`; None: no category): the accept
            length it was drawn at.
        completion_tokens: Tokens generated (the first one comes from prefill).
        verify_ct: Verify steps (draft+verify cycles); 0 without speculation.
        correct_drafts: Accepted drafts over all verify steps, bonus tokens excluded.
        finish_reason: "length", "abort", or None while running.
        finished_mono: Model time of the final output.
        step_tokens: Tokens each engine step added (prefill first, then one per decode step).
        step_deadlines: Model time each of those steps ended (event-loop clock).
        step_drafted: Draft tokens proposed at each verify step.
        step_accepted: Drafts accepted at each verify step (before truncation at the limit).
        step_drafts: Draft tokens proposed at each decode step, 0 where it drafted none (an
            adaptive schedule at 0, no speculation), aligned with `step_deadlines[1:]`.
        chunk_tokens: Tokens carried by each streamed chunk (one entry per engine output
            written to the stream; an OpenAI chat role or finish chunk rides with its output).
        chunk_completion_tokens: Cumulative `completion_tokens` at each of those chunks.
        chunk_deadlines: Model time each sent chunk was due.
        chunk_send_mono: When each chunk went to the socket (event-loop clock, taken just
            before the write).
        chunk_send_wall: Same, unix seconds.
    """

    rid: str
    endpoint: str
    stream: bool
    epoch: int
    prompt_tokens: int
    cached_tokens: int
    max_new_tokens: int
    arrival_mono: float
    arrival_wall: float
    category: str | None = None
    completion_tokens: int = 0
    verify_ct: int = 0
    correct_drafts: int = 0
    finish_reason: str | None = None
    finished_mono: float | None = None
    step_tokens: list[int] = field(default_factory=list)
    step_deadlines: list[float] = field(default_factory=list)
    step_drafted: list[int] = field(default_factory=list)
    step_accepted: list[int] = field(default_factory=list)
    step_drafts: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    chunk_completion_tokens: list[int] = field(default_factory=list)
    chunk_deadlines: list[float] = field(default_factory=list)
    chunk_send_mono: list[float] = field(default_factory=list)
    chunk_send_wall: list[float] = field(default_factory=list)

    @property
    def accept_length(self) -> float | None:
        """SGLang's per-request `spec_accept_length` = completion_tokens / verify_ct."""
        return self.completion_tokens / self.verify_ct if self.verify_ct else None

    def to_json(self) -> str:
        """One compact JSON line."""
        return json.dumps(asdict(self), separators=(",", ":"))


def append_jsonl(path: str, record: EmittedRequest) -> None:
    """Append `record` to the JSONL file at `path` (created if missing)."""
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(record.to_json() + "\n")
