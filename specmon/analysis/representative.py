"""Whether the probe accepts like the server's traffic (docs/metrics.md, "Probe versus traffic").

The probe's accept length (its recent runs pooled) is one prompt's, or a few categories'; the
server's own over all its requests in about the same window comes from its counters
(`rates.server_accept_length`). When the two differ beyond noise, the probe is not
representative of the traffic, and what the traffic gets is the figure to judge by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specmon.analysis.acceptance import impossible_accept_length
from specmon.analysis.pooled import Pooled
from specmon.analysis.rates import WindowAccept, counter_delta
from specmon.model import RunFigures, ServerMetrics

GAP_SHARE = 0.10
"""A gap larger than this share of the traffic's accept length may be named: five pooled probes
of 256 tokens on the simulator read accept length within ~2% (one standard error), and the
counters over a window of traffic rest on more steps still."""
NOISE_SES = 3.0
"""The gap must also exceed this many standard errors of the probe's own accept length
(`Pooled.accept_rel_se`, which needs two probes): a real NGRAM server's single probes spread
by over 10% (captures: 2.70 then 3.2 on the same prompt), so one probe names nothing."""
COUNTED_SOURCES = ("drafts", "counters")
"""The server figures that count every request of the window (SGLang's 40-step gauge is too
short a window to judge a 10% gap by)."""


@dataclass(frozen=True, slots=True)
class TrafficGap:
    """The probe's accept length beside the traffic's."""

    probe: float
    traffic: float
    traffic_source: str
    """Where the traffic's figure came from (`WindowAccept.source`)."""
    probe_rel_se: float | None
    """The probe's relative standard error (None with one probe: no gap is named)."""
    only_probes: bool = False
    """The server finished no request in the window but the probes (`only_probes`): its figure
    is theirs, with no other traffic to compare them with."""

    @property
    def share(self) -> float:
        """How far the probe reads from the traffic, relative to the traffic's (+: above)."""
        return self.probe / self.traffic - 1

    @property
    def named(self) -> bool:
        """Whether the gap is beyond noise (`GAP_SHARE`, `NOISE_SES`): the probe is not
        representative."""
        if self.probe_rel_se is None or self.only_probes:
            return False
        return abs(self.share) > max(GAP_SHARE, NOISE_SES * self.probe_rel_se)

    @property
    def sentence(self) -> str:
        """The finding in words, for the events log, `check` and the advisor."""
        if self.only_probes:
            return (
                f"the server accepts {self.traffic:.2f} over specmon's probes alone: "
                "it finished no other request, so there is no traffic to compare the probe with"
            )
        if self.named:
            verdict = "the probe is not representative"
        elif self.probe_rel_se is None:
            verdict = "one probe is too few to tell whether it is representative"
        else:
            verdict = "the probe is representative"
        return f"your traffic accepts {self.traffic:.2f}, the probe {self.probe:.2f}: {verdict}"


def traffic_gap(
    probe: Pooled,
    traffic: WindowAccept | None,
    *,
    probes_alone: bool = False,
    draft_length: int | None = None,
) -> TrafficGap | None:
    """The probe's pooled runs beside the traffic, or None when either accept length is missing,
    the server's is not a count over the window (`COUNTED_SOURCES`), or it is one no verify step
    of `draft_length` k can give (steps went uncounted: `impossible_accept_length`; no gap is
    judged against a figure that cannot be). `probes_alone`: the window held no request but
    the probes (`only_probes`)."""
    if probe.accept_length is None or traffic is None or traffic.source not in COUNTED_SOURCES:
        return None
    if traffic.value <= 0 or impossible_accept_length(traffic.value, draft_length) is not None:
        return None
    return TrafficGap(
        probe.accept_length, traffic.value, traffic.source, probe.accept_rel_se, probes_alone
    )


def only_probes(before: ServerMetrics, after: ServerMetrics, probes: Sequence[RunFigures]) -> bool:
    """Whether the server finished nothing between two scrapes but these probes: no more
    requests than they were, or (without a request counter) no more tokens than they generated.
    False when neither counter is read, or after a restart."""
    requests = counter_delta(before.num_requests_total, after.num_requests_total)
    if requests is not None:
        return not requests.reset and requests.value <= len(probes)
    tokens = counter_delta(before.generation_tokens_total, after.generation_tokens_total)
    if tokens is not None:
        return not tokens.reset and tokens.value <= sum(run.completion_tokens for run in probes)
    return False
