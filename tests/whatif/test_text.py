"""The launch flags the what-if and the advisor print: whole, so they can be pasted."""

from __future__ import annotations

import json
import shlex

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.load import Crossover
from specmon.model import ServerInfo, SpecConfig
from specmon.whatif.text import ab_lines, draft_flag


def _vllm(**args: object) -> ServerInfo:
    spec = SpecConfig("ngram", 4, None, None)
    return ServerInfo(
        "vllm", "0.32.0", "m", 1, 1, 1, spec, None, None, None, True, {"model": "m", **args}
    )


def test_the_vllm_flag_is_the_whole_config_at_the_new_length() -> None:
    # It printed --speculative-config '{…"num_speculative_tokens": 2}', which vLLM cannot read.
    info = _vllm(
        speculative_method="ngram",
        speculative_num_speculative_tokens=4,
        speculative_prompt_lookup_min=2,
        speculative_prompt_lookup_max=4,
    )
    flag = draft_flag(info, 2)
    assert "…" not in flag
    name, value = shlex.split(flag)
    assert name == "--speculative-config"
    assert json.loads(value) == {
        "method": "ngram",
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
        "num_speculative_tokens": 2,
    }


def test_outside_dev_mode_the_vllm_flag_holds_what_is_known() -> None:
    name, value = shlex.split(draft_flag(_vllm(), 3))
    assert name == "--speculative-config" and json.loads(value) == {"num_speculative_tokens": 3}


def test_an_ab_of_another_server_is_named_with_its_url() -> None:
    # The store finds an A/B by configuration: `check` of one server printed another's A/B
    # as if it were its own.
    ab = StoredAb(16, 1000.0, (), Crossover(None, None, None), "http://10.0.0.2:8000")
    assert (
        ab_lines(ab, 1004.0, "http://10.0.0.1:8000")[0]
        == "ab #16 on http://10.0.0.2:8000, 4s ago: "
    )
    assert ab_lines(ab, 1004.0, "http://10.0.0.2:8000")[0] == "ab #16, 4s ago: "
    assert ab_lines(ab, 1004.0)[0] == "ab #16, 4s ago: "
