"""Baseline validity on real SGLang 0.5.17 server args (spec vs plain, plain restarted)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from factories import a_run
from hypothesis import given
from hypothesis import strategies as st

from specmon.analysis.validity import (
    LifetimeCheck,
    LifetimeState,
    Validity,
    baseline_validity,
    config_args,
    differing_keys,
    fingerprint,
    lifetime_check,
    lifetime_of,
)
from specmon.model import Lifetime, Protocol, Snapshot
from specmon.sources.backends.sglang import parse_server_info

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sglang-0.5.17"
PROTOCOL = Protocol(5, 1, 500, 0.0, "p")
RUN = a_run(
    completion_tokens=500,
    prompt_tokens=32,
    ttft_ms=45.0,
    e2e_s=7.9,
    e2e_tok_s=63.0,
    decode_tok_s=63.4,
)


def _snapshot(name: str, created_at: float = 1000.0, **arg_changes: object) -> Snapshot:
    body = json.loads((FIXTURES / name).read_text())
    body.update(arg_changes)
    return Snapshot(created_at, "http://h:1", None, parse_server_info(body), PROTOCOL, (RUN,))


SAME = LifetimeCheck(LifetimeState.SAME, "the same server process")


def _validity(
    base: Snapshot, run: Snapshot, now: float, lifetime: LifetimeCheck = SAME
) -> Validity:
    return baseline_validity(base, run.server, now=now, lifetime=lifetime, protocol=run.protocol)


def test_real_spec_and_plain_share_a_fingerprint() -> None:
    # They differ in port, random_seed, max_total_num_tokens, cuda_graph_config and the
    # speculative_* args only: none of those make the baseline inapplicable.
    spec, plain = _snapshot("spec/server_info"), _snapshot("plain/server_info")
    assert differing_keys(plain.server.args, spec.server.args) == []
    assert fingerprint(plain.server.args) == fingerprint(spec.server.args)
    assert _validity(plain, spec, 1060.0).confirmed


def test_another_backend_is_one_reason_not_every_flag() -> None:
    # A vLLM server shares few flag names with an SGLang baseline: every one of them would
    # "differ"; the one reason is the backend.
    plain = _snapshot("plain/server_info")
    spec = _snapshot("spec/server_info")
    other = replace(spec.server, backend="vllm", args={"max_num_seqs": 256, "seed": 0})
    validity = baseline_validity(plain, other, now=1060.0, lifetime=SAME)
    assert validity.reasons == ("another backend (SGLang baseline, vLLM server)",)


def test_real_restart_keeps_the_fingerprint() -> None:
    before = _snapshot("plain/server_info")
    after = _snapshot("plain_server_info_after_restart.json")
    assert fingerprint(before.server.args) == fingerprint(after.server.args)


def test_a_changed_flag_is_named() -> None:
    plain = _snapshot("plain/server_info", mem_fraction_static=0.5)
    spec = _snapshot("spec/server_info")
    validity = _validity(plain, spec, 1060.0)
    assert not validity.valid
    assert validity.reasons == ("flags differ: mem_fraction_static",)


def test_age_protocol_restart_and_speculative_baseline() -> None:
    plain, spec = _snapshot("plain/server_info"), _snapshot("spec/server_info")
    old = _validity(plain, spec, 1000.0 + 31 * 60)
    assert old.reasons == ("too old (31 min > 30 min)",)
    other = replace(spec, protocol=replace(PROTOCOL, max_tokens=128))
    assert _validity(plain, other, 1060.0).reasons == ("different protocol: max_tokens",)
    restarted = LifetimeCheck(LifetimeState.RESTARTED, "the baseline server restarted since")
    assert _validity(plain, spec, 1060.0, restarted).reasons == (restarted.detail,)
    assert "speculation on" in _validity(spec, spec, 1060.0).reasons[0]


def test_ages_are_precise_enough_to_compare_with_their_limit() -> None:
    plain, spec = _snapshot("plain/server_info"), _snapshot("spec/server_info")
    validity = baseline_validity(plain, spec.server, now=1065.0, lifetime=SAME, max_age_s=5)
    assert validity.reasons == ("too old (65 s > 5 s)",)


def test_age_and_flags_need_no_run() -> None:
    # The dashboard with the probe off: the server's info alone says the baseline is stale.
    plain = _snapshot("plain/server_info", tp_size=2)
    spec = _snapshot("spec/server_info")
    validity = baseline_validity(plain, spec.server, now=1000.0 + 5 * 3600, lifetime=SAME)
    assert validity.reasons == ("flags differ: tp_size", "too old (5.0 h > 30 min)")


def test_an_unverified_lifetime_is_valid_but_not_confirmed() -> None:
    plain, spec = _snapshot("plain/server_info"), _snapshot("spec/server_info")
    unknown = LifetimeCheck(LifetimeState.UNVERIFIED, "metrics off")
    validity = _validity(plain, spec, 1060.0, unknown)
    assert validity.valid and not validity.confirmed
    assert validity.unverified == ("metrics off",)


def test_lifetime_evidence() -> None:
    plain = _snapshot("plain/server_info")
    after = _snapshot("plain_server_info_after_restart.json")
    recorded = Lifetime("a", 1000.0, (("generation_tokens_total", 500.0),))
    # The same process start proves the same lifetime; another proves a restart.
    assert lifetime_check(recorded, Lifetime("a", 1000.4)).state == LifetimeState.SAME
    moved = lifetime_check(recorded, Lifetime("a", 2000.0))
    assert (moved.state, moved.since) == (LifetimeState.RESTARTED, 2000.0)
    # As it bears on a stored run: a restart after the run leaves it unverified, not stale.
    assert moved.as_of(1999.0).state == LifetimeState.UNVERIFIED
    assert moved.as_of(2000.0) == moved
    # Without start times: counters that went down, or a new launch (random_seed changed).
    down = Lifetime("a", None, (("generation_tokens_total", 10.0),))
    assert "counters went down" in lifetime_check(recorded, down).detail
    real = lifetime_of(plain.server, None), lifetime_of(after.server, None)
    assert lifetime_check(real[0], real[1]).state == LifetimeState.RESTARTED
    grown = Lifetime("a", None, (("generation_tokens_total", 900.0),))
    assert lifetime_check(replace(recorded, started_at=None), grown).state == LifetimeState.SAME
    # Metrics off on a remote server: nothing to tell a restart by.
    assert lifetime_check(Lifetime("a"), Lifetime("a")).state == LifetimeState.UNVERIFIED
    unreachable = lifetime_check(recorded, None, unreachable="connection refused")
    assert unreachable.state == LifetimeState.UNVERIFIED
    assert "connection refused" in unreachable.detail
    assert lifetime_check(None, Lifetime("a")).state == LifetimeState.UNVERIFIED


_arg_names = st.sampled_from(
    [
        "tp_size",
        "mem_fraction_static",
        "port",
        "random_seed",
        "speculative_algorithm",
        "speculative_num_steps",
        "model_path",
    ]
)
_arg_values = st.one_of(st.none(), st.integers(0, 3), st.lists(st.integers(0, 2), max_size=2))


@pytest.mark.slow
@given(st.dictionaries(_arg_names, _arg_values), st.dictionaries(_arg_names, _arg_values))
def test_differing_keys_are_the_config_keys_that_differ(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    ca, cb = config_args(a), config_args(b)
    missing = object()
    expected = sorted(k for k in ca.keys() | cb.keys() if ca.get(k, missing) != cb.get(k, missing))
    assert differing_keys(a, b) == expected
