"""A speculative server's launch command, split into the command it is launched with and its
baseline: the same command minus every speculative flag, plus the settings pinned on both.

Pure: the command, the environment and the flag rules come in, two `Launch`es come out.

SGLang changes settings when speculation is on (SGLang 0.5.17, `arg_groups/speculative_hook.py`:
EAGLE family and NGRAM alike): an unset `--max-running-requests` becomes 48, and mixed chunked
prefill is turned off. Both are pinned, to the same explicit value on both commands, so that the
baseline runs the speculative server's schedule. Overlap scheduling stays on with speculation on
GPUs since spec v2 (0.5.17 turns it off on CPU only; older releases turned it off for the
speculative server), and an unset `--mem-fraction-static` is sized from the memory the
speculative batch reserves: neither can be pinned without knowing the release or the GPU, so a
note says so, and the pair's validity (the servers' reported args) names them if they differ.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from specmon import backend_facts
from specmon.backend_facts import BackendFacts
from specmon.errors import TargetError
from specmon.launch import flags
from specmon.launch.flags import VARIABLE, FlagRules, is_flag
from specmon.launch.sglang_parser import sglang_rules
from specmon.sources.secrets import shown_command


class ServerKind(StrEnum):
    """Which server a launch command starts: a backend's name, or the simulator."""

    SGLANG = backend_facts.SGLANG.name
    SIM = "sim"
    """The built-in simulator, which takes SGLang's flag names."""
    VLLM = backend_facts.VLLM.name
    LLAMACPP = backend_facts.LLAMACPP.name


Pins = tuple[list[str], tuple["Pin", ...], tuple[str, ...]]
"""The command's kept words with pinned flags taken out, the pins, and notes."""


@dataclass(frozen=True, slots=True)
class Kind:
    """How specmon launches one kind of server (`KINDS`): nothing else in `launch` asks which."""

    facts: BackendFacts
    """What it is (display name, default port); the simulator's are SGLang's."""
    starts: Callable[[str, str], bool]
    """Whether a command of this program (its basename) and `-m` module starts it."""
    rules: FlagRules
    """Its maintained flag rules."""
    own_rules: Callable[[], FlagRules | None] | None = None
    """Rules read off the server's own parser, where it loads (SGLang's)."""
    pins: Callable[[list[str]], Pins] | None = None
    """Settings the server changes with speculation on, pinned on both commands."""
    notes: Callable[[Sequence[str]], tuple[str, ...]] = lambda _argv: ()
    """Notes on the command as given."""
    baseline_only: tuple[str, ...] = ()
    """Words the baseline adds (the simulator speculates unless told not to)."""
    plain_by_help: bool = False
    """Whether a build may speculate by default, so the baseline asks its `--help` how not to
    (llama.cpp: `launch.llamacpp_help`)."""


# Environment variables that turn speculation on or shape it: SGLang's spec-v2 switch (a warning
# since 0.5.17, a switch before), llama-server's `LLAMA_ARG_*` draft options.
_SPECULATIVE_ENV = re.compile(r"SGLANG_ENABLE_SPEC_V2$|LLAMA_ARG_.*(DRAFT|SPEC)")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class Launch:
    """One way to start the server.

    Attributes:
        argv: The program and its arguments.
        env: Variables set for it (the command's leading `NAME=value` words).
        unset: Variables taken out of the inherited environment.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    unset: tuple[str, ...] = ()

    def shell(self) -> str:
        """The launch as one shell command line, credentials masked (`shown_command`): what
        specmon shows and saves, never what it runs (that is `argv`, `environ`)."""
        prefix = [w for name in self.unset for w in ("-u", name)]
        prefix += [f"{name}={value}" for name, value in self.env]
        return shown_command((["env", *prefix] if prefix else []) + list(self.argv))

    def environ(self, inherited: Mapping[str, str]) -> dict[str, str]:
        """The environment it runs with, from the one it inherits."""
        out = {k: v for k, v in inherited.items() if k not in self.unset}
        out.update(self.env)
        return out


@dataclass(frozen=True, slots=True)
class Pin:
    """A setting given the same explicit value on both commands."""

    flag: str
    value: str | None
    """The value on both; None: the flag is taken out of both."""
    reason: str

    def describe(self) -> str:
        """One line: the setting and why it is pinned."""
        setting = f"{self.flag} {self.value}" if self.value is not None else f"no {self.flag}"
        return f"{setting}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Split:
    """A launch command split into its speculative and baseline launches."""

    kind: ServerKind
    speculative: Launch
    baseline: Launch
    removed: tuple[str, ...]
    """The speculative words taken out (flags and their values, then `env` names)."""
    pins: tuple[Pin, ...]
    baseline_only: tuple[str, ...]
    """Words added to the baseline alone (the simulator speculates unless told not to)."""
    notes: tuple[str, ...]
    rules: str
    """Where the flag rules came from (SGLang's parser, or a maintained list)."""


def server_kind(command: Sequence[str]) -> ServerKind:
    """Which server a command starts, from its program and module (after any leading `env`
    and `NAME=value` words).

    Raises:
        TargetError: None that specmon knows.
    """
    _, argv = _leading_assignments(command)
    if not argv:
        raise TargetError("no server command after --")
    program = os.path.basename(argv[0])
    module = argv[argv.index("-m") + 1] if "-m" in argv[:3] and argv[-1] != "-m" else ""
    found = next((kind for kind, how in KINDS.items() if how.starts(program, module)), None)
    if found is None:
        raise TargetError(
            f"cannot tell which server `{shown_command(argv[:3])}` starts: give an SGLang "
            "(python -m sglang.launch_server), vLLM (vllm serve), llama-server or "
            "python -m specmon.sim command"
        )
    return found


def default_rules(kind: ServerKind) -> FlagRules:
    """The maintained flag rules of a server kind."""
    return KINDS[kind].rules


def rules_for(kind: ServerKind) -> FlagRules:
    """The best flag rules for a server kind: its own parser's where it loads (SGLang's, with
    the `specmon[sglang]` extra), else the maintained list."""
    own = KINDS[kind].own_rules
    found = own() if own is not None else None
    return found if found is not None else default_rules(kind)


def command_argv(command: Sequence[str]) -> list[str]:
    """The program and its arguments, after any leading `env` and `NAME=value` words."""
    return _leading_assignments(command)[1]


def split_command(
    command: Sequence[str],
    environ: Mapping[str, str],
    rules: FlagRules | None = None,
    *,
    plain: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> Split:
    """Split a speculative launch command into the launch and its baseline.

    Args:
        command: The command as the user gave it, optionally led by `env` and `NAME=value`.
        environ: The environment it would inherit (speculative variables in it are unset for
            the baseline).
        rules: Flag rules (SGLang's own parser's); the kind's maintained list by default.
        plain: Words the baseline adds to turn off speculation the build does by default
            (llama.cpp: `launch.llamacpp_help`).
        notes: Notes of the caller's own (how `plain` was found).

    Raises:
        TargetError: An empty or unknown command, or one without speculation.
    """
    env, argv = _leading_assignments(command)
    if not argv:
        raise TargetError("no server command after --")
    kind = server_kind(argv)
    rules = rules or default_rules(kind)
    kept, removed = _walk(argv, rules)
    how = KINDS[kind]
    pins: tuple[Pin, ...] = ()
    found = how.notes(argv)
    if how.pins is not None:
        kept, pins, pinned_notes = how.pins(kept)
        found = (*found, *pinned_notes)
    unset = tuple(sorted({n for n in (*environ, *dict(env)) if _SPECULATIVE_ENV.match(n)}))
    base_env = tuple((n, v) for n, v in env if n not in unset)
    baseline_only = how.baseline_only or tuple(plain)
    if not how.baseline_only and not removed and not unset:
        raise TargetError(
            f"no speculative flag in the command ({rules.source}): nothing to compare it with"
        )
    pinned = tuple(w for p in pins if p.value is not None for w in (p.flag, p.value))
    return Split(
        kind=kind,
        speculative=Launch((*_with_pins(argv, rules, pins), *pinned), env),
        baseline=Launch((*kept, *pinned, *baseline_only), base_env, unset),
        removed=(*removed, *unset),
        pins=pins,
        baseline_only=baseline_only,
        notes=(*found, *notes),
        rules=rules.source,
    )


def _leading_assignments(command: Sequence[str]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    words = list(command)
    if words and words[0] == "env":
        words = words[1:]
    env: list[tuple[str, str]] = []
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env.append((name, value))
    return tuple(env), words


def groups(argv: Sequence[str], rules: FlagRules) -> list[tuple[str | None, list[str]]]:
    """The command as (flag, words) groups: a flag with its values, or a lone positional word."""
    out: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if not is_flag(word):
            out.append((None, [word]))
            i += 1
            continue
        flag, inline, _ = word.partition("=")
        n = 0 if inline else _arity(rules.arity(flag), argv[i + 1 :])
        out.append((flag, list(argv[i : i + 1 + n])))
        i += 1 + n
    return out


def _arity(known: int | None, rest: Sequence[str]) -> int:
    if known is None:
        return 1 if rest and not is_flag(rest[0]) else 0
    if known == VARIABLE:
        return next((i for i, w in enumerate(rest) if is_flag(w)), len(rest))
    return min(known, len(rest))


def _walk(argv: Sequence[str], rules: FlagRules) -> tuple[list[str], list[str]]:
    kept: list[str] = []
    removed: list[str] = []
    for flag, words in groups(argv, rules):
        (removed if flag is not None and rules.speculative(flag) else kept).extend(words)
    return kept, removed


MAX_RUNNING_SPECULATIVE = "48"
"""SGLang's `--max-running-requests` when unset and speculation is on (0.5.17)."""


def _sglang_pins(kept: list[str]) -> Pins:
    flags_given = {flag for flag, _ in groups(kept, flags.SGLANG) if flag is not None}
    pins: list[Pin] = []
    if "--max-running-requests" not in flags_given:
        pins.append(
            Pin(
                "--max-running-requests",
                MAX_RUNNING_SPECULATIVE,
                "SGLang sets an unset value to 48 when speculation is on",
            )
        )
    if "--enable-mixed-chunk" in flags_given:
        pins.append(
            Pin("--enable-mixed-chunk", None, "SGLang turns mixed chunking off with speculation")
        )
        kept = [w for w in kept if w != "--enable-mixed-chunk"]
    notes = []
    if "--disable-overlap-schedule" not in flags_given:
        notes.append(
            "overlap scheduling is left as SGLang sets it (on with speculation on GPUs since "
            "spec v2; off for the speculative server only in older releases): add "
            "--disable-overlap-schedule to the command to pin it"
        )
    if "--mem-fraction-static" not in flags_given:
        notes.append(
            "--mem-fraction-static is unset: SGLang sizes it from the memory the speculative "
            "batch reserves, so the two servers' KV pools may differ; give it to pin it"
        )
    return kept, tuple(pins), tuple(notes)


def _dynamic_sd_notes(argv: Sequence[str]) -> tuple[str, ...]:
    """A vLLM Dynamic SD schedule (`num_speculative_tokens_per_batch_size` in
    `--speculative-config`) runs Model Runner V1 with piecewise CUDA graphs only (vLLM docs
    `dynamic_speculative_decoding.md`; issue #49548: throughput collapsing at the switch): its
    K = 0 band is slower than this plain baseline, which the A/B measures too."""
    if not any("num_speculative_tokens_per_batch_size" in word for word in argv):
        return ()
    return (
        "the speculative config has a Dynamic SD schedule (num_speculative_tokens_per_batch_"
        "size): vLLM then runs piecewise CUDA graphs only, so even its K = 0 band decodes "
        "slower than this plain baseline (vLLM issue #49548); the A/B counts that against it",
    )


def _with_pins(argv: Sequence[str], rules: FlagRules, pins: Sequence[Pin]) -> list[str]:
    """The speculative command with the flags the pins take out removed."""
    dropped = {p.flag for p in pins if p.value is None}
    return [w for flag, words in groups(argv, rules) if flag not in dropped for w in words]


def address(launch: Launch, kind: ServerKind) -> tuple[str, int]:
    """The host and port to reach the launched server at (a wildcard host means loopback).

    Raises:
        TargetError: A `--port` that is not a port number.
    """
    host, port = "127.0.0.1", str(KINDS[kind].facts.default_port)
    for flag, words in groups(launch.argv, default_rules(kind)):
        value = words[0].partition("=")[2] if "=" in words[0] else " ".join(words[1:])
        if flag == "--host" and value:
            host = value
        elif flag == "--port" and value:
            port = value
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise TargetError(f"--port {port!r} in the server command is not a port number")
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return host, int(port)


KINDS: dict[ServerKind, Kind] = {
    ServerKind.SIM: Kind(
        backend_facts.SGLANG,
        lambda _program, module: module == "specmon.sim",
        flags.SGLANG,
        pins=_sglang_pins,
        baseline_only=("--speculative-algorithm", "none"),
    ),
    ServerKind.SGLANG: Kind(
        backend_facts.SGLANG,
        # `python -m sglang.launch_server`, `sglang serve`
        lambda program, module: module.startswith("sglang") or program == "sglang",
        flags.SGLANG,
        own_rules=sglang_rules,
        pins=_sglang_pins,
    ),
    ServerKind.VLLM: Kind(
        backend_facts.VLLM,
        # `vllm serve`, the api_server module
        lambda program, module: module.startswith("vllm") or program == "vllm",
        flags.VLLM,
        notes=_dynamic_sd_notes,
    ),
    ServerKind.LLAMACPP: Kind(
        backend_facts.LLAMACPP,
        lambda program, _module: program.startswith("llama-server"),
        flags.LLAMACPP,
        plain_by_help=True,
    ),
}
"""Every kind of server specmon launches, tried in order (the simulator first: its module
is the one `-m` names)."""
