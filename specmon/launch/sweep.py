"""`ab --sweep`: the speculative configurations to try, each a variant of the speculative launch.

Pure. The axes per server: SGLang (and the simulator) `steps`, `topk`, `draft-tokens`; vLLM
`tokens` (`num_speculative_tokens` in `--speculative-config`); llama.cpp `draft-max`. A
combination SGLang would not run as given is skipped, with the reason, as SGLang would treat it
(0.5.17, `arg_groups/speculative_hook.py`): with topk 1 it sets draft tokens to steps + 1, so
any other draft count is the same configuration again; NGRAM derives steps and topk itself.
So with topk 1, a sweep of draft-tokens alone sets the steps to match: draft-tokens=4 launches
steps 3 (a chain of 3 drafts and the root), labelled "draft-tokens=4 steps=3".
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from specmon.errors import TargetError
from specmon.launch.split import Launch, ServerKind, Split, default_rules, groups


def _json_length(current: str | None, value: int) -> str:
    """vLLM's `--speculative-config` with `num_speculative_tokens` set to `value`."""
    try:
        config = json.loads(current or "{}")
    except ValueError:
        raise TargetError(f"--speculative-config is not JSON: {current!r}") from None
    if not isinstance(config, dict):
        raise TargetError(f"--speculative-config is not a JSON object: {current!r}")
    return json.dumps({**config, "num_speculative_tokens": value})


@dataclass(frozen=True, slots=True)
class Axes:
    """What a sweep varies on one kind of server (`SWEEPS`)."""

    flags: Mapping[str, tuple[str, ...]]
    """Each axis and the flags that set it (whichever the command uses; the first when it
    uses none)."""
    value: Callable[[str | None, int], str] = lambda _current, value: str(value)
    """A flag's new value from its current one and the axis value."""
    tree: bool = False
    """SGLang's steps × topk tree: combinations it would overrule are adjusted or skipped."""


_SGLANG = Axes(
    {
        "steps": ("--speculative-num-steps",),
        "topk": ("--speculative-eagle-topk",),
        "draft-tokens": ("--speculative-num-draft-tokens",),
    },
    tree=True,
)
SWEEPS: Mapping[ServerKind, Axes] = {
    ServerKind.SGLANG: _SGLANG,
    ServerKind.SIM: _SGLANG,
    ServerKind.VLLM: Axes({"tokens": ("--speculative-config",)}, _json_length),
    ServerKind.LLAMACPP: Axes(
        {"draft-max": ("--draft-max", "--spec-draft-n-max", "--draft", "--draft-n")}
    ),
}


@dataclass(frozen=True, slots=True)
class Variant:
    """One speculative configuration of a sweep."""

    label: str
    """`draft-tokens=4`, `steps=2 topk=1 draft-tokens=3` …"""
    launch: Launch


def parse_axes(texts: Sequence[str], kind: ServerKind) -> dict[str, tuple[int, ...]]:
    """`["draft-tokens=2,4,8"]` -> `{"draft-tokens": (2, 4, 8)}`, checked against the server's axes.

    Raises:
        TargetError: An unknown axis, or values that are not positive integers.
    """
    known = SWEEPS[kind].flags
    axes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, _, values = text.partition("=")
        if name not in known:
            raise TargetError(
                f"--sweep {text!r}: {kind} sweeps {', '.join(known)} (e.g. {next(iter(known))}=2,4)"
            )
        try:
            numbers = tuple(sorted({int(v) for v in values.split(",") if v.strip()}))
        except ValueError:
            numbers = ()
        if not numbers or numbers[0] < 1:
            raise TargetError(f"--sweep {text!r}: give positive integers, e.g. {name}=2,4")
        axes[name] = numbers
    return axes


def variants(split: Split, axes: Mapping[str, tuple[int, ...]]) -> tuple[list[Variant], list[str]]:
    """Every combination of the axes as a speculative launch, and the skipped ones with why.

    Raises:
        TargetError: An axis the command's algorithm does not take (NGRAM's steps or topk), or a
            vLLM `--speculative-config` that is not JSON.
    """
    names = list(axes)
    found: list[Variant] = []
    skipped: list[str] = []
    algorithm = (_value(split.speculative.argv, split, "--speculative-algorithm") or "").upper()
    if algorithm == "NGRAM" and set(names) - {"draft-tokens"}:
        raise TargetError("NGRAM derives steps and topk itself: sweep draft-tokens only")
    for combo in itertools.product(*(axes[n] for n in names)):
        chosen = dict(zip(names, combo, strict=True))
        if _chain(chosen, split, algorithm):
            chosen["steps"] = chosen["draft-tokens"] - 1
        label = " ".join(f"{n}={v}" for n, v in chosen.items())
        why = _invalid(chosen, split, algorithm)
        if why:
            skipped.append(f"{label}: {why}")
            continue
        argv = split.speculative.argv
        for name, value in chosen.items():
            argv = _set(argv, split, SWEEPS[split.kind].flags[name], value)
        found.append(Variant(label, dataclasses.replace(split.speculative, argv=argv)))
    return found, skipped


def _chain(chosen: Mapping[str, int], split: Split, algorithm: str) -> bool:
    """Whether this combination sweeps the draft tokens of a topk-1 chain without its steps
    (which SGLang would overrule: it drafts steps + 1 tokens with topk 1)."""
    if not SWEEPS[split.kind].tree or algorithm == "NGRAM":
        return False
    if "draft-tokens" not in chosen or "steps" in chosen or chosen["draft-tokens"] < 2:
        return False
    topk = chosen.get("topk") or _int(
        _value(split.speculative.argv, split, "--speculative-eagle-topk")
    )
    return topk == 1


def _invalid(chosen: Mapping[str, int], split: Split, algorithm: str) -> str | None:
    if "draft-tokens" in chosen and chosen["draft-tokens"] < 2:
        return "a verify step needs at least 2 draft tokens (the root and one draft)"
    if not SWEEPS[split.kind].tree or algorithm == "NGRAM":
        return None
    argv = split.speculative.argv
    steps = chosen.get("steps") or _int(_value(argv, split, "--speculative-num-steps"))
    topk = chosen.get("topk") or _int(_value(argv, split, "--speculative-eagle-topk"))
    drafts = chosen.get("draft-tokens")
    if steps is None or topk is None or drafts is None:
        return None
    if topk == 1 and drafts != steps + 1:
        return (
            f"SGLang sets draft tokens to steps + 1 ({steps + 1}) with topk 1 (sweep "
            "draft-tokens without steps, and specmon sets steps = draft-tokens - 1)"
        )
    if drafts > steps * topk + 1:
        return f"more draft tokens than a tree of {steps} steps × topk {topk} holds"
    return None


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _value(argv: Sequence[str], split: Split, flag: str) -> str | None:
    for name, words in groups(argv, default_rules(split.kind)):
        if name == flag:
            return words[0].partition("=")[2] if "=" in words[0] else " ".join(words[1:]) or None
    return None


def _set(
    argv: tuple[str, ...], split: Split, flags: tuple[str, ...], value: int
) -> tuple[str, ...]:
    """The command with the first of `flags` it has set to `value` (added when it has none)."""
    out: list[str] = []
    done = False
    for name, words in groups(argv, default_rules(split.kind)):
        if name in flags and not done:
            current = words[0].partition("=")[2] if "=" in words[0] else " ".join(words[1:])
            out += [name, SWEEPS[split.kind].value(current, value)]
            done = True
        else:
            out += words
    if not done:
        out += [flags[0], SWEEPS[split.kind].value(None, value)]
    return tuple(out)
