"""Sample lines parsed once: what an endpoint served at its last scrape is not parsed again.

A GPU endpoint serves the same lines scrape after scrape but for a few values (utilisation,
power, clocks); its limits, totals, maximum clocks and info series do not move. With 16 servers
of 8 GPUs at 1 Hz, prometheus-client's parser reading every line every second was the fleet's
largest cost. Here only the lines that changed since the endpoint's previous scrape go to the
parser (prometheus-client's, with each label set parsed once by `LabelSets`); the others reuse
what it made of them last time. A GPU endpoint's memo holds its last scrape's lines, so it
stays as large as a scrape; the one /metrics memo of every server holds a bounded number.

A line that changed is mostly a series whose value moved (a GPU's power, a counter): its name
and labels are the parser's from an earlier line of the same series, and only the number is
read (`float`, as the parser reads it). A series is remembered only from a line the parser
read as exactly that name and labels, then one number and no timestamp; any other line (a new
series, a timestamp, a value the parser may read otherwise) goes to the parser.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from specmon.sources.label_sets import LabelSets

MAX_VALUE = float(2**53)
"""The largest magnitude of a sample kept: past it a float no longer counts by ones, so no
counter, gauge or histogram of a real server reaches it, and a value such as 1e308 (a hostile
or broken server's) multiplies to infinity in the first figure that uses it. A sample beyond it
(or infinite, or NaN) is left out: the series is unknown ("—"), as if the server had not sent
it."""
SERIES_KEEP = 16_384
"""Series remembered (name and labels) before starting afresh, for a memo without `keep`."""
# A value both prometheus-client's parser and `float` read as the same number: no "_", no hex,
# no timestamp after it (the line's last space comes before it).
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?Inf|NaN")


@dataclass(frozen=True, slots=True)
class ParsedSample:
    """One sample line as prometheus-client's parser read it."""

    name: str
    labels: dict[str, str]
    value: float


class ScrapeMemo:
    """Lines already parsed (`parse`): one endpoint's last scrape, or (`keep`) the recent lines
    of any number of endpoints."""

    def __init__(self, keep: int | None = None) -> None:
        """Args:
        keep: Hold up to this many lines, whatever scrape they came from, starting afresh
            when full (one memo shared by a fleet's servers); None: the last scrape's lines.
        """
        self.keep = keep
        self._last: dict[str, ParsedSample | None] = {}
        self._series: dict[str, tuple[str, dict[str, str]]] = {}
        """A line's text before its value -> the name and labels the parser read there."""
        self._label_sets = LabelSets()

    def parse(self, text: str) -> list[ParsedSample]:
        """The samples of exposition text, in order (comments skipped: samples are read by
        name, not by family); values that are not a usable number (`usable`) left out.

        Raises:
            ValueError, TypeError, IndexError, KeyError: What prometheus-client's parser raises
                for text that is not exposition format (a line that is not one sample).
        """
        # Lines end at "\n" only, as for prometheus-client: a label value may hold a "\r".
        lines = [line for line in text.split("\n") if line.strip() and line[0] != "#"]
        parsed: dict[str, ParsedSample | None] = {}
        unknown = []
        for line in dict.fromkeys(line for line in lines if line not in self._last):
            head, _, value = line.rpartition(" ")
            series = self._series.get(head)
            if series is None or not _NUMBER.fullmatch(value):
                unknown.append(line)
            elif not usable(number := float(value)):
                parsed[line] = None
            else:
                parsed[line] = ParsedSample(series[0], series[1], number)
        parsed.update(zip(unknown, self._parse(unknown), strict=True))
        current = {line: parsed[line] if line in parsed else self._last[line] for line in lines}
        if self.keep is None:
            self._last = current
        else:
            if len(self._last) + len(parsed) > self.keep:
                self._last = {}
            self._last.update(current)
        return [s for line in lines if (s := current[line]) is not None]

    def _parse(self, lines: list[str]) -> list[ParsedSample | None]:
        """Each line's sample (None for a value not `usable`), by the parser; raises when a line
        is not exactly one sample. Remembers the series of each line that is a name, labels and
        a number."""
        if not lines:
            return []
        text = self._label_sets.shorten("\n".join(lines) + "\n")
        samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
        if len(samples) != len(lines):
            raise ValueError(f"{len(lines)} lines gave {len(samples)} samples")
        if len(self._series) + len(lines) > (self.keep or SERIES_KEEP):
            self._series = {}
        parsed: list[ParsedSample | None] = []
        for line, s in zip(lines, samples, strict=True):
            value = float(s.value)
            if math.isnan(value):
                parsed.append(None)
                continue
            sample = ParsedSample(s.name, self._label_sets.labels(s.labels), value)
            parsed.append(sample if usable(value) else None)
            head, _, number = line.rpartition(" ")
            if s.timestamp is None and _NUMBER.fullmatch(number) and float(number) == value:
                self._series[head] = (sample.name, sample.labels)
        return parsed


def usable(value: float) -> bool:
    """A sample's value specmon reads: finite and within `MAX_VALUE`."""
    return -MAX_VALUE <= value <= MAX_VALUE  # False for NaN and the infinities too
