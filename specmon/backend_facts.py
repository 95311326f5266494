"""What each kind of server is, as plain data every layer may read: its display name, default
port, the launch flags that set its draft length or turn speculation off, and what its draft
length k counts.

Which kinds there are is the `specmon.backends` entry-point group: each names a `BackendPlugin`
(its facts, its detection priority, the module that reads it), the built-ins (`BUILT_IN`) too, so
a new kind of server is a package of its own (docs/development.md, "Adding a backend"). Nothing
outside this module, the readers and the simulator checks a backend's name
(`tests/test_backend_names.py`).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specmon.model import ServerInfo


@dataclass(frozen=True, slots=True)
class NoOpFlag:
    """A server arg that has no effect from some version on."""

    arg: str
    default: object
    since: str
    why: str


@dataclass(frozen=True, slots=True)
class BackendFacts:
    """One kind of server, as data (no I/O)."""

    name: str
    """`ServerInfo.backend`: "sglang", "vllm" …"""
    display: str
    """How every surface names it: "SGLang", "vLLM" …"""
    default_port: int
    """The port its server listens on unless told otherwise."""
    draft_flag: Callable[[ServerInfo, int], str]
    """The launch flag that sets draft length k on this server."""
    speculative_flags: str
    """The launch flags that make it speculative: what a relaunch for a baseline leaves out."""
    off_flag: str
    """The launch flags that turn speculation off."""
    length_name: str | None = None
    """Its own name for the draft length (`SpecConfig.length_name`); None: SGLang's steps, topk
    and draft tokens."""
    counts_root: bool = False
    """Whether its configured draft tokens count the root token too (k = value − 1: SGLang's
    `speculative_num_draft_tokens`); otherwise k is `SpecConfig.num_steps`."""
    adaptive_setting: Callable[[int, int | None, int], str] | None = None
    """Draft length k for the batch sizes from `start` to `end` (None: no end) in its adaptive
    mode's own setting; None where it has no adaptive mode."""
    details_off: str | None = None
    """How it would send per-request acceptance details, said when a probe got none."""
    no_op_flags: tuple[NoOpFlag, ...] = field(default=())
    itl_per_step: bool = False
    """Whether its inter-token latency histogram observes once per engine step (vLLM: a draft+verify
    cycle, whatever tokens it yields) rather than per token (SGLang splits a step's interval over
    its tokens): the Server panel then says "ITL/step"."""
    shows_speculation_late: bool = False
    """Whether its speculation (its draft length included) shows only once a request has
    finished: off turning on, with the same args, is then the same launch, not a restart."""


def _sglang_draft_flag(info: ServerInfo, k: int) -> str:
    spec = info.speculative
    if spec is not None and spec.algorithm.upper() in ("EAGLE", "EAGLE3"):
        return f"--speculative-num-steps {k} --speculative-num-draft-tokens {k + 1}"
    return f"--speculative-num-draft-tokens {k + 1}"


def _vllm_draft_flag(info: ServerInfo, k: int) -> str:
    """vLLM's `--speculative-config` at draft length k: every key the server exposes (its
    dev-mode config: method, draft model, lookup sizes), with `num_speculative_tokens` k. Outside
    dev mode vLLM names no method, and the JSON holds what is known."""
    prefix = "speculative_"
    config = {
        name.removeprefix(prefix): value
        for name, value in info.args.items()
        if name.startswith(prefix) and name != f"{prefix}num_speculative_tokens"
    }
    return f"--speculative-config '{json.dumps({**config, 'num_speculative_tokens': k})}'"


SGLANG = BackendFacts(
    name="sglang",
    display="SGLang",
    default_port=30000,
    draft_flag=_sglang_draft_flag,
    speculative_flags="--speculative-*",
    off_flag="--speculative-algorithm (remove it)",
    counts_root=True,
    # A batch-size bucket of `--speculative-adaptive-config`, keyed by the batch size it starts
    # at (topk 1, so k drafts are k steps).
    adaptive_setting=lambda start, _end, k: (
        f'"{start}": {{"candidate_steps": [{k}]}} in --speculative-adaptive-config'
    ),
    details_off="not sent: SGLang 0.5.9+ sends its histogram with every response; older "
    "versions give the stream's chunks only",
    no_op_flags=(
        # From SGLang's scheduler: 0.3.5.post2 is the last to read it.
        NoOpFlag(
            "num_continuous_decode_steps",
            1,
            "0.3.6",
            "only the scheduler of 0.3.5 and earlier reads it; later it is a server arg and "
            "nothing more",
        ),
    ),
)
VLLM = BackendFacts(
    name="vllm",
    display="vLLM",
    default_port=8000,
    draft_flag=_vllm_draft_flag,
    speculative_flags="--speculative-config",
    off_flag="--speculative-config (remove it)",
    itl_per_step=True,
    length_name="num_speculative_tokens",
    # A Dynamic SD range (`num_speculative_tokens_per_batch_size: [[lo, hi, K], …]`).
    adaptive_setting=lambda start, end, k: (
        f"[{start}, {end if end is not None else 'max_num_seqs'}, {k}] in "
        "num_speculative_tokens_per_batch_size of --speculative-config"
    ),
    details_off="off: vLLM 0.32+ sends them when launched with "
    "--per-request-spec-decode-metrics summary (or detailed); until then the counters serve, "
    "while the probe runs alone",
)
LLAMACPP = BackendFacts(
    name="llamacpp",
    display="llama.cpp",
    default_port=8080,
    draft_flag=lambda _info, k: f"--spec-draft-n-max {k}",
    speculative_flags="-md and --spec-type",
    off_flag="-md and --spec-type (remove them)",
    details_off="none: llama.cpp has no per-request acceptance; its counters serve while the "
    "probe runs alone",
)

TRTLLM = BackendFacts(
    name="trtllm",
    display="TensorRT-LLM",
    default_port=8000,
    # `trtllm-serve` takes its speculative config in the YAML file of --extra_llm_api_options
    # (`speculative_config: {decoding_type, max_draft_len, …}`); k is `max_draft_len`. Its
    # batch-size schedule (`draft_len_schedule`) is not offered: how its keys bound the batch
    # sizes was not read.
    draft_flag=lambda _info, k: (
        f"max_draft_len: {k} under speculative_config in --extra_llm_api_options"
    ),
    speculative_flags="speculative_config in --extra_llm_api_options",
    off_flag="speculative_config in --extra_llm_api_options (remove it)",
    length_name="max_draft_len",
    shows_speculation_late=True,  # its per-position counters: a child once a count is above 0
    details_off="not sent: trtllm-serve puts the request's avg_decoded_tokens_per_iter in its "
    "stream's chunks where its version has it; without it the counters serve, while the probe "
    "runs alone",
)


@dataclass(frozen=True, slots=True)
class BackendPlugin:
    """What an entry point of the `specmon.backends` group names: one kind of server.

    The built-ins are declared the same way (`BUILT_IN`, registered in pyproject.toml).
    """

    facts: BackendFacts
    """What it is, as data every layer reads."""
    priority: int
    """Detection order: the lowest is asked first (ties by name). A backend whose probe of a
    server would claim another kind's goes after it."""
    source: str
    """The module that reads it (imported only when a server is detected): its
    `fetch_server_info` (raises `NotThisServer` on any other kind), `fetch_metrics` and
    `run_probe` (`sources.backends.base`'s `InfoFn`, metrics reader and `ProbeFn`)."""

    @property
    def name(self) -> str:
        return self.facts.name


_SOURCES = "specmon.sources.backends."
BUILT_IN = (
    # SGLang's server-info routes first; TensorRT-LLM's `/version` with a model card owned by
    # `tensorrt_llm` before vLLM's `/version` (its `/version` is vLLM's shape); llama.cpp's
    # `/props` last (none of the others has one). Gaps leave room for plug-ins.
    SGLANG_PLUGIN := BackendPlugin(SGLANG, 100, f"{_SOURCES}sglang"),
    TRTLLM_PLUGIN := BackendPlugin(TRTLLM, 200, f"{_SOURCES}trtllm"),
    VLLM_PLUGIN := BackendPlugin(VLLM, 300, f"{_SOURCES}vllm"),
    LLAMACPP_PLUGIN := BackendPlugin(LLAMACPP, 400, f"{_SOURCES}llamacpp"),
)
"""The built-ins, found even where specmon is not installed (a source tree on `sys.path` has no
entry points); pyproject.toml registers each of them under the same name."""

FACTS = {plugin.name: plugin.facts for plugin in BUILT_IN}
"""The built-in kinds of server by `ServerInfo.backend` (`known()` adds the plug-ins)."""

GROUP = "specmon.backends"
_log = logging.getLogger(__name__)


@functools.cache
def plugins() -> tuple[BackendPlugin, ...]:
    """Every backend, in detection order: the built-ins merged by name with the entry points of
    `specmon.backends` (loaded once). A plug-in that fails to load, is not a `BackendPlugin` or
    takes a name already taken is reported in one line (the `specmon.backend_facts` log) and
    skipped."""
    found = {plugin.name: plugin for plugin in BUILT_IN}
    for point in sorted(entry_points(group=GROUP), key=lambda p: (p.name, p.value)):
        try:
            plugin = point.load()
        except Exception as exc:  # a plug-in's own import: any error is its, never specmon's
            _log.warning("backend plug-in %s (%s) not loaded: %s", point.name, point.value, exc)
            continue
        if not isinstance(plugin, BackendPlugin) or plugin.name != point.name:
            _log.warning(
                "backend plug-in %s (%s) skipped: not a BackendPlugin named %s",
                point.name,
                point.value,
                point.name,
            )
        elif found.get(plugin.name, plugin) is not plugin:
            _log.warning(
                "backend plug-in %s (%s) skipped: the name is taken", point.name, point.value
            )
        else:
            found[plugin.name] = plugin
    return tuple(sorted(found.values(), key=lambda p: (p.priority, p.name)))


def known() -> dict[str, BackendFacts]:
    """Every kind of server specmon reads now, by name, built-ins and plug-ins."""
    return {plugin.name: plugin.facts for plugin in plugins()}


def find(backend: str) -> BackendFacts | None:
    """The facts of a backend by name; None for one not installed here (a record written by
    another version, or with a plug-in this machine lacks)."""
    return known().get(backend)


def facts(backend: str) -> BackendFacts:
    """The facts of a backend by name.

    Raises:
        UnknownBackend: No backend of that name is installed (`find` for a record's name).
    """
    found = find(backend)
    if found is None:
        from specmon.errors import UnknownBackend  # errors stand on the model, which needs this

        raise UnknownBackend(
            f"backend {backend!r} is not installed here (known: {', '.join(known())})"
        )
    return found


def display_name(backend: str) -> str:
    """ "SGLang", "vLLM" …: how every surface names a backend (an unknown one by its name)."""
    found = find(backend)
    return found.display if found is not None else backend
