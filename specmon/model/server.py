"""What a server says about itself: its speculative configuration and its server info."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specmon.backend_facts import display_name


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The speculative-decoding configuration a server reports."""

    algorithm: str
    """`speculative_algorithm`, e.g. "EAGLE3", "NGRAM"; vLLM's `method` ("unknown" where it is
    not exposed: `UNKNOWN_METHOD`)."""
    num_steps: int | None
    eagle_topk: int | None
    num_draft_tokens: int | None
    draft_model_path: str | None = None
    length_name: str | None = None
    """The server's own name for the draft length held in `num_steps`
    (`BackendFacts.length_name`: vLLM's `num_speculative_tokens`); None: SGLang's steps, topk and
    draft tokens."""

    def describe(self) -> str:
        """One short line, e.g. "EAGLE3 steps=2 topk=1 draft=3", or in the server's own words
        "eagle3 num_speculative_tokens=3"."""
        if self.length_name is not None:
            method = self.algorithm
            if method == UNKNOWN_METHOD:
                method = "method not exposed,"
            length = f" {self.length_name}={self.num_steps}" if self.num_steps is not None else ""
            return f"{method}{length}".rstrip(",")
        parts = [self.algorithm]
        for name, value in (
            ("steps", self.num_steps),
            ("topk", self.eagle_topk),
            ("draft", self.num_draft_tokens),
        ):
            if value is not None:
                parts.append(f"{name}={value}")
        return " ".join(parts)

    def brief(self) -> str:
        """The fleet table's few cells: "EAGLE3 2/1/3" (steps/topk/draft) when all three are
        known, else the known ones by letter, e.g. "NGRAM d4" (SGLang's n-gram drafting reads
        only the draft size; its steps and topk are placeholders); a server naming its draft
        length otherwise, its method and k, e.g. "eagle3 k=3" ("? k=3": method not exposed)."""
        if self.length_name is not None:
            method = "?" if self.algorithm == UNKNOWN_METHOD else self.algorithm
            return method + (f" k={self.num_steps}" if self.num_steps is not None else "")
        values = (self.num_steps, self.eagle_topk, self.num_draft_tokens)
        if self.algorithm.upper() == "NGRAM" and self.num_draft_tokens is not None:
            values = (None, None, self.num_draft_tokens)
        if all(v is not None for v in values):
            return f"{self.algorithm} {'/'.join(str(v) for v in values)}"
        known = [f"{k}{v}" for k, v in zip("skd", values, strict=True) if v is not None]
        return " ".join([self.algorithm, *known])


UNKNOWN_METHOD = "unknown"
"""vLLM's speculative method where it does not say it (outside its dev mode)."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """One server's identity and configuration, normalised across versions."""

    backend: str
    """"sglang", "vllm" … (keys of `backend_facts.FACTS`)."""
    version: str | None
    model: str | None
    """The served model name (what `/v1/models` and the metrics' `model_name` say)."""
    tp_size: int | None
    dp_size: int | None
    pp_size: int | None
    speculative: SpecConfig | None
    """None when speculation is off."""
    stream_interval: int | None
    cuda_graph_disabled: bool | None
    cuda_graph_max_bs: int | None
    metrics_enabled: bool | None
    args: Mapping[str, Any]
    """Every server arg the server reported, secrets masked; the basis of fingerprints."""
    last_gen_throughput: float | None = None
    avg_spec_accept_length: float | None = None
    """SGLang's cumulative accept length since start or the last /flush_cache."""
    info_route: str = "/server_info"
    """Which route answered (`/server_info` or the older `/get_server_info`)."""

    @property
    def title(self) -> str:
        """ "SGLang 0.5.23": the backend's display name and version (`server_title`)."""
        return server_title(self.backend, self.version)


def server_title(backend: str, version: str | None) -> str:
    """ "SGLang 0.5.23": a backend's display name and version."""
    return f"{display_name(backend)} {version or '?'}"
