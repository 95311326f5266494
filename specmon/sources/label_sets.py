"""Label sets parsed once: a scrape's text with each `{…}` block swapped for a short token.

An endpoint in dcgm-exporter's names repeats one long label set (gpu, UUID, device, modelName,
Hostname, driver) on every field of a GPU, and the same sets at every scrape; prometheus-client's
parser reads labels a character at a time, which made one reading of 8 GPUs cost ~3.8 ms, and a
fleet of 16 such servers at 1 Hz 6% of a core. Here each distinct block is parsed once, by
prometheus-client's parser itself, and the text handed to it carries `{specmon_label_set="7"}`
instead; `labels` gives the real set back. Numbers, names and types are parsed as before. One
reading then costs about half (2.0 ms; 3.3 instead of 6.8 for dcgm-exporter's own 8-GPU text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "specmon_label_set"
MAX_SETS = 4096
"""Distinct sets kept before starting afresh (process labels come and go)."""
# A label block: quoted values may hold `}` and escaped quotes (the text format's escapes);
# unrolled (runs of plain characters, then a quoted value), a third faster than one alternation.
_BLOCK = re.compile(r'\{[^"}]*(?:"(?:[^"\\]|\\.)*"[^"}]*)*\}')


class LabelSets:
    """The label sets one endpoint has served, each parsed once."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}
        self._labels: dict[str, dict[str, str]] = {}

    def shorten(self, text: str) -> str:
        """`text` with every label block that parses replaced by its token."""
        if len(self._tokens) + text.count("{") > MAX_SETS:
            self._forget()  # before, not midway: tokens given out in `text` must stay known
        return _BLOCK.sub(self._token, text)

    def _forget(self) -> None:
        self._tokens.clear()
        self._labels.clear()

    def _token(self, match: re.Match[str]) -> str:
        block = match.group(0)
        token = self._tokens.get(block)
        if token is None:
            labels = _parse(block)
            if labels is None:
                return block  # not labels (a brace in a HELP text): left for the parser
            token = str(len(self._tokens))
            self._tokens[block] = token
            self._labels[token] = labels
        return f'{{{TOKEN}="{token}"}}'

    def labels(self, shortened: Mapping[str, str]) -> dict[str, str]:
        """The real labels of a sample parsed from shortened text (a copy)."""
        token = shortened.get(TOKEN)
        if token is None:
            return dict(shortened)
        extra = {k: v for k, v in shortened.items() if k != TOKEN}  # a histogram's `le`
        return {**self._labels[token], **extra}


def _parse(block: str) -> dict[str, str] | None:
    """A block's labels, by prometheus-client's parser (None: not a label block)."""
    try:
        for family in text_string_to_metric_families(f"x{block} 0\n"):
            return dict(family.samples[0].labels)
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    return None
