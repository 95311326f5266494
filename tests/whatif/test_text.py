"""The launch flags the what-if and the advisor print: whole, so they can be pasted."""

from __future__ import annotations

import json
import shlex

from specmon.model import ServerInfo, SpecConfig
from specmon.whatif.text import draft_flag


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
