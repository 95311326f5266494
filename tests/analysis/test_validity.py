"""Baseline validity on real SGLang 0.5.17 server args (spec vs plain, plain restarted)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from specmon.analysis.validity import baseline_validity, differing_keys, fingerprint
from specmon.model import Protocol, RunFigures, Snapshot
from specmon.sources.sglang import parse_server_info

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"
PROTOCOL = Protocol(5, 1, 500, 0.0, "p")
RUN = RunFigures(500, 32, 45.0, 7.9, 63.0, 63.4, None, None, None, None, None, None)


def _snapshot(name: str, created_at: float = 1000.0, **arg_changes: object) -> Snapshot:
    body = json.loads((FIXTURES / name).read_text())
    body.update(arg_changes)
    return Snapshot(created_at, "http://h:1", None, parse_server_info(body), PROTOCOL, (RUN,))


def test_real_spec_and_plain_share_a_fingerprint() -> None:
    # They differ in port, random_seed, max_total_num_tokens, cuda_graph_config and the
    # speculative_* args only: none of those make the baseline inapplicable.
    spec, plain = _snapshot("spec/server_info"), _snapshot("plain/server_info")
    assert differing_keys(plain.server.args, spec.server.args) == []
    assert fingerprint(plain.server.args) == fingerprint(spec.server.args)
    assert baseline_validity(plain, spec, now=1060.0).valid


def test_real_restart_keeps_the_fingerprint() -> None:
    before = _snapshot("plain/server_info")
    after = _snapshot("plain_server_info_after_restart.json")
    assert fingerprint(before.server.args) == fingerprint(after.server.args)


def test_a_changed_flag_is_named() -> None:
    plain = _snapshot("plain/server_info", mem_fraction_static=0.5)
    spec = _snapshot("spec/server_info")
    validity = baseline_validity(plain, spec, now=1060.0)
    assert not validity.valid
    assert validity.reasons == ("flags differ: mem_fraction_static",)


def test_age_protocol_restart_and_speculative_baseline() -> None:
    plain, spec = _snapshot("plain/server_info"), _snapshot("spec/server_info")
    old = baseline_validity(plain, spec, now=1000.0 + 31 * 60)
    assert old.reasons == ("too old (31 min > 30 min)",)
    other = replace(spec, protocol=replace(PROTOCOL, max_tokens=128))
    assert baseline_validity(plain, other, now=1060.0).reasons == (
        "different protocol: max_tokens",
    )
    assert "restarted" in baseline_validity(plain, spec, now=1060.0, restarted=True).reasons[0]
    assert "speculation on" in baseline_validity(spec, spec, now=1060.0).reasons[0]
