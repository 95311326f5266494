"""The advisor: findings that name the flag to change and the evidence (docs/metrics.md).

Pure: it reads a comparison, a what-if, the server's args and earlier snapshots; `check` and
the dashboard's `w` screen show what it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from specmon.analysis.catalogue import Measured, figure
from specmon.analysis.comparison import Comparison, Verdict
from specmon.analysis.pooled import Pooled, pool
from specmon.analysis.representative import TrafficGap
from specmon.analysis.validity import fingerprint, protocol_differences
from specmon.backend_facts import find
from specmon.model import Protocol, RunFigures, ServerInfo, Snapshot
from specmon.whatif.inputs import WhatIfAnswer, is_tree, predict
from specmon.whatif.prediction import WhatIf
from specmon.whatif.text import advisor_flags

Level = Literal["info", "warn"]

# The evidence's figures are the catalogue's (`analysis.catalogue`), a prediction's too.
DECODE, ACCEPT = figure("decode tok/s"), figure("accept length")
SPEEDUP, BREAK_EVEN = figure("speedup"), figure("break-even accept length")

ACCEPT_DROP = 0.05
"""An accept length this much (relative) below an earlier one of the same configuration is a
fall, not noise: a probe's accept length varies by a few percent between runs."""


@dataclass(frozen=True, slots=True)
class Advice:
    """One finding: what is wrong or could be better, the flag to change, and the evidence."""

    level: Level
    text: str
    flag: str | None
    """The launch flag to change (None where the change is not a flag)."""
    evidence: str


def advise_runs(
    info: ServerInfo,
    runs: Sequence[RunFigures],
    *,
    protocol: Protocol,
    base: Pooled | None,
    comparison: Comparison | None,
    earlier: Sequence[Snapshot],
    adaptive: bool,
    running: float | None,
    traffic: TrafficGap | None,
) -> tuple[WhatIfAnswer, list[Advice]]:
    """The what-if of a server's runs and the advisor's findings on them, as the dashboard's `w`
    screen and `check` ask for them.

    Args:
        info: The server.
        runs: Its probes (the what-if's and the advisor's figures).
        protocol: Their protocol.
        base: The baseline's runs pooled, where it applies; else None.
        comparison: The verdict's comparison against it, or None.
        earlier: Stored snapshots (other draft lengths; acceptance falling since).
        adaptive: It drafts otherwise than its flags, or switched (`analysis.drafting.adapts`):
            the flags named are its adaptive setting's at the load of `running` requests.
        running: Its running requests now (None: not read).
        traffic: The probes beside its traffic (`analysis.representative`).
    """
    answer = predict(info, protocol, runs, base, earlier)
    flag_for, off_flag = advisor_flags(info, differs=adaptive, running=running)
    found = advise(
        info,
        protocol=protocol,
        now=pool(runs),
        comparison=comparison,
        whatif=answer.result,
        earlier=earlier,
        flag_for=flag_for,
        off_flag=off_flag,
        traffic=traffic,
    )
    return answer, found


def advise(
    info: ServerInfo,
    *,
    protocol: Protocol,
    now: Pooled,
    comparison: Comparison | None,
    whatif: WhatIf | None,
    earlier: Sequence[Snapshot],
    flag_for: Callable[[int], str],
    off_flag: str,
    traffic: TrafficGap | None = None,
) -> list[Advice]:
    """Every finding for a speculative server's runs, most important first.

    Args:
        info: The server.
        protocol: Its runs' protocol.
        now: Its pooled runs.
        comparison: Against the valid baseline, or None.
        whatif: The predictions at other draft lengths, or None.
        earlier: Stored snapshots (acceptance falling since an earlier one of this
            configuration).
        flag_for: The launch flag that sets draft length k on this server.
        off_flag: The launch flags that turn speculation off on this server.
        traffic: The probe's accept length beside the server's traffic's: when the gap is
            named, the traffic's figure is what speculation earns (`_unrepresentative`).
    """
    found = [*_no_op_flags(info), *_tree(info)]
    found += _unrepresentative(traffic, comparison, off_flag)
    found += _under_break_even(comparison, whatif, flag_for, off_flag)
    found += _better_draft_length(whatif, flag_for)
    found += _acceptance_fall(info, protocol, now, earlier)
    return found


def _version(text: str | None) -> tuple[int, ...] | None:
    parts = (text or "").split(".")
    digits = [p for p in parts if p.isdigit()]
    return tuple(int(p) for p in digits) if len(digits) == len(parts) else None


def _no_op_flags(info: ServerInfo) -> list[Advice]:
    version = _version(info.version)
    found = []
    kind = find(info.backend)  # a record's backend may not be installed here: none known
    for flag in kind.no_op_flags if kind is not None else ():
        value = info.args.get(flag.arg)
        since = _version(flag.since)
        if value in (None, flag.default) or version is None:
            continue
        if since is not None and version >= since:
            name = "--" + flag.arg.replace("_", "-")
            found.append(
                Advice(
                    "info",
                    f"{name} {value} does nothing in {info.title}",
                    name,
                    f"no effect since {flag.since}: {flag.why}",
                )
            )
    return found


def _tree(info: ServerInfo) -> list[Advice]:
    spec = info.speculative
    if spec is None or not is_tree(info):
        return []
    return [
        Advice(
            "info",
            f"no what-if for EAGLE topk {spec.eagle_topk}: the model predicts chains of drafts",
            "--speculative-eagle-topk",
            "a tree verifies several candidates per position; acceptance by position "
            "describes one candidate per position (topk 1)",
        )
    ]


def _under_break_even(
    comparison: Comparison | None,
    whatif: WhatIf | None,
    flag_for: Callable[[int], str],
    off_flag: str,
) -> list[Advice]:
    """Only on a LOSING verdict: a speedup whose interval holds 0 is noise, not a loss, whatever
    side of break-even its point estimate falls."""
    if comparison is None or comparison.verdict != Verdict.LOSING:
        return []
    accept = comparison.accept_length
    if accept is None or comparison.break_even is None:
        return []
    evidence = (
        f"accept length {ACCEPT.format(accept)} < break-even "
        f"{BREAK_EVEN.format(comparison.break_even)} (cycle / baseline ms per token; "
        f"{DECODE.format(comparison.now_tok_s)} vs {DECODE.value_text(comparison.base_tok_s)}, "
        f"{SPEEDUP.written(Measured(comparison=comparison))})"
    )
    others = [p for p in whatif.predictions if not p.measured] if whatif is not None else []
    winning = [p for p in others if p.comparison and p.comparison.verdict == Verdict.WINNING]
    hopeful = [p for p in others if p.comparison and p.comparison.speedup.value > 0]
    if winning or hopeful:
        best = max(winning or hopeful, key=lambda p: p.decode_tok_s)
        assert best.comparison is not None
        k, gain = best.draft_tokens, SPEEDUP.written(Measured(comparison=best.comparison))
        if winning:
            text = f"k = {k} is predicted to win ({gain})"
        else:
            text = (
                f"k = {k} might win ({gain}), but its interval holds 0: bench it at k = {k} "
                "before turning speculation off"
            )
        return [
            Advice("warn", f"speculation loses at this draft length; {text}", flag_for(k), evidence)
        ]
    return [
        Advice(
            "warn",
            "speculation loses: no draft length is predicted to win",
            off_flag,
            evidence,
        )
    ]


def _unrepresentative(
    gap: TrafficGap | None, comparison: Comparison | None, off_flag: str
) -> list[Advice]:
    """The probe accepts unlike the traffic: judge by the traffic's accept length. Against a
    baseline, the traffic's speedup is its accept length over break-even, less 1 (decode tok/s
    is 1000 · accept / cycle, the baseline's 1000 · break-even / cycle: `comparison`)."""
    if gap is None or not gap.named:
        return []
    text = "the probe is not representative of the traffic"
    level: Level = "info"
    flag = None
    if comparison is not None and comparison.break_even:
        gain = gap.traffic / comparison.break_even - 1
        if gap.traffic < comparison.break_even:
            level, flag = "warn", off_flag
            text += f": at the traffic's accept length speculation loses ({gain:+.0%})"
        else:
            text += f": at the traffic's accept length speculation gains {gain:+.0%}"
        evidence = f"{gap.sentence}; break-even {BREAK_EVEN.format(comparison.break_even)}"
    else:
        evidence = gap.sentence
    text += "; --probe-prompts FILE with your traffic's prompts makes the probe match it"
    return [Advice(level, text, flag, evidence)]


def _better_draft_length(whatif: WhatIf | None, flag_for: Callable[[int], str]) -> list[Advice]:
    faster = whatif.faster if whatif is not None else None
    if whatif is None or faster is None:
        return []
    current = whatif.current
    word = "shorter" if faster.draft_tokens < current.draft_tokens else "longer"
    evidence = (
        f"k = {faster.draft_tokens}: {DECODE.value_text(faster.decode_tok_s)} predicted "
        f"[{DECODE.format(faster.decode_low)}, "
        f"{DECODE.format(faster.decode_high or faster.decode_tok_s)}] vs "
        f"{DECODE.format(current.decode_tok_s)} at k = {current.draft_tokens}"
    )
    return [
        Advice(
            "info",
            f"a {word} draft is predicted faster: k = {faster.draft_tokens}",
            flag_for(faster.draft_tokens),
            evidence,
        )
    ]


def _acceptance_fall(
    info: ServerInfo, protocol: Protocol, now: Pooled, earlier: Sequence[Snapshot]
) -> list[Advice]:
    """The accept length against the newest earlier snapshot of this exact configuration."""
    if now.accept_length is None or info.speculative is None:
        return []
    same = [
        s
        for s in earlier
        if s.server.speculative == info.speculative
        and s.server.backend == info.backend
        and fingerprint(s.server.args) == fingerprint(info.args)
        and not protocol_differences(s.protocol, protocol)
    ]
    for snapshot in sorted(same, key=lambda s: s.created_at, reverse=True):
        before = pool(snapshot.runs).accept_length
        if before is None:
            continue
        if now.accept_length >= before * (1 - ACCEPT_DROP):
            return []
        causes = ["a sampling change (temperature ≠ 0 lowers it)", "other prompts"]
        if snapshot.server.version != info.version:
            causes.insert(0, f"the upgrade {snapshot.server.version} → {info.version}")
        return [
            Advice(
                "warn",
                f"acceptance fell: accept length {ACCEPT.format(now.accept_length)}, was "
                f"{ACCEPT.format(before)} "
                f"in snapshot #{snapshot.id}",
                None,
                f"{now.accept_length / before - 1:+.0%} at the same configuration and "
                f"protocol; look for {', '.join(causes)}",
            )
        ]
    return []
