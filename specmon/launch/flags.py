"""Which flags of a launch command are speculative, and how many values each takes.

Two sources of that knowledge: the maintained lists below, and, for SGLang, SGLang's own argument
parser (`ServerArgs.add_cli_args`) when the `specmon[sglang]` extra is installed
(`parser_rules`), so that a flag added in a new SGLang release is split right without a release
of specmon. The lists are SGLang 0.5.17's `server_args.py`, vLLM 0.32's `--speculative-config`
(and the flags it replaced), and llama.cpp's `common/arg.cpp` draft options.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass

VARIABLE = -1
"""A flag that takes values up to the next flag (argparse's `nargs="+"` or `"*"`)."""

_NUMBER = re.compile(r"-\d+(\.\d*)?([eE][-+]?\d+)?$|-\.\d+$")


def is_flag(token: str) -> bool:
    """Whether a token is an option (a negative number is a value)."""
    return token.startswith("-") and token != "-" and not _NUMBER.match(token)


@dataclass(frozen=True, slots=True)
class FlagRules:
    """How one backend's command line reads.

    Attributes:
        source: Where the rules come from, as shown to the user.
        speculative: Whether a flag (as written, without `=value`) is a speculative one.
        arity: How many values a flag takes (`VARIABLE`: up to the next flag); None when
            unknown, and then the next token is its value unless it is a flag (none of these
            servers takes a positional argument after its flags).
    """

    source: str
    speculative: Callable[[str], bool]
    arity: Callable[[str], int | None]


# SGLang 0.5.17 speculative flags that take no value (store_true); every other `--speculative-*`
# flag takes one.
_SGLANG_SWITCHES = frozenset(
    {
        "--speculative-use-rejection-sampling",
        "--speculative-skip-dp-mlp-sync",
        "--speculative-adaptive",
        "--speculative-dspark-align-verify-tokens-to-graph-tier",
        "--enable-multi-layer-eagle",
    }
)


def _sglang_speculative(flag: str) -> bool:
    # Prefixes, not names: SGLang's argparse accepts abbreviations (`--speculative-algo`).
    return flag.startswith("--speculative-") or flag == "--enable-multi-layer-eagle"


SGLANG = FlagRules(
    "a maintained list (SGLang 0.5.17)",
    _sglang_speculative,
    lambda flag: 0 if flag in _SGLANG_SWITCHES else (1 if _sglang_speculative(flag) else None),
)


def _vllm_speculative(flag: str) -> bool:
    # `--speculative-config` (and its `--speculative_config`, `--speculative-config.method`
    # forms); before 0.8: `--speculative-model`, `--num-speculative-tokens`,
    # `--ngram-prompt-lookup-max/min` and the other `--speculative-*` flags.
    name = flag.replace("_", "-")
    return name.startswith(("--speculative-", "--ngram-prompt-lookup-")) or name == (
        "--num-speculative-tokens"
    )


VLLM = FlagRules(
    "a maintained list (vLLM 0.32)",
    _vllm_speculative,
    lambda flag: 1 if _vllm_speculative(flag) else None,
)

# llama.cpp's short draft options and the long ones that do not end in `-draft`.
_LLAMA_DRAFT = frozenset(
    {"-md", "-ngld", "-devd", "-cd", "-ctkd", "-ctvd", "-td", "-tbd", "-hfd", "-hfrd", "-otd"}
    | {"-cmoed", "-ncmoed", "-Cd", "-Crd", "-Cbd", "-Crbd", "--model-draft"}
)
_LLAMA_SWITCHES = frozenset({"-cmoed", "--cpu-moe-draft", "--cpu-strict-draft"})


def _llama_speculative(flag: str) -> bool:
    return (
        flag in _LLAMA_DRAFT
        or flag.startswith(("--spec-", "--draft"))
        or (flag.startswith("--") and flag.endswith("-draft"))
    )


def _llama_arity(flag: str) -> int | None:
    if flag in _LLAMA_SWITCHES:
        return 0
    if flag == "--spec-replace":
        return 2  # TARGET DRAFT
    return 1 if _llama_speculative(flag) else None


LLAMACPP = FlagRules("a maintained list (llama.cpp)", _llama_speculative, _llama_arity)


def parser_rules(
    parser: argparse.ArgumentParser, speculative_dest: Callable[[str], bool], source: str
) -> FlagRules:
    """Rules read off an argparse parser: a flag's arity from its action, speculative by its
    destination.

    Abbreviations resolve as argparse resolves them (a unique prefix of a long option).
    """
    options = parser._option_string_actions  # argparse's own table of every option string

    def action(flag: str) -> argparse.Action | None:
        if flag in options:
            return options[flag]
        if flag.startswith("--"):
            matches = {options[name] for name in options if name.startswith(flag)}
            if len(matches) == 1:
                return matches.pop()
        return None

    def arity(flag: str) -> int | None:
        found = action(flag)
        if found is None:
            return None
        nargs = found.nargs
        if nargs is None:
            return 1
        if isinstance(nargs, int):
            return nargs
        return VARIABLE if nargs in ("*", "+", argparse.REMAINDER) else None

    def speculative(flag: str) -> bool:
        found = action(flag)
        return found is not None and speculative_dest(found.dest)

    return FlagRules(source, speculative, arity)
