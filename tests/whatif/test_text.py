"""The launch flags the what-if and the advisor print: whole, so they can be pasted."""

from __future__ import annotations

import json
import shlex

from specmon.analysis.ab_runs import StoredAb
from specmon.analysis.acceptance import from_histogram
from specmon.analysis.by_load import LoadBand
from specmon.analysis.cycle_model import CyclePoint, fit_cycle
from specmon.analysis.load import Crossover
from specmon.analysis.pooled import Pooled
from specmon.model import ServerInfo, SpecConfig
from specmon.whatif.prediction import what_if
from specmon.whatif.text import ab_lines, by_load_lines, draft_flag, passed_over, row, summary


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


def test_the_table_says_why_a_faster_predicted_length_is_passed_over() -> None:
    """Issue 38: `w` marked `2 … measured, best` under a `1` predicted faster, the reason only
    in the `best:` line far below (out of reach at 80x24); the faster row says it now. The
    demo's figures: EAGLE3 at k = 2, accept length 2.04 per 27.6 ms cycle, baseline 15.9
    ms/token; k = 1 is predicted 2% faster, within its interval."""
    positions = from_histogram([36, 24, 40])
    assert positions is not None
    now = Pooled(5, 1000 * 2.04 / 27.6, 0.02, 2.04, 27.6)
    base = Pooled(3, 1000 / 15.9, 0.001, None, None)
    cycle = fit_cycle([CyclePoint(2, 27.6, "now")], base.ms_per_token, model_drafts=True)
    assert cycle is not None
    w = what_if(now, positions, 2, cycle, base)
    assert w is not None and w.best.draft_tokens == 1 and w.choice.draft_tokens == 2
    why = passed_over(w)
    assert why == "k = 1: +2.0%, within its interval"
    spec = SpecConfig("EAGLE3", 2, 1, 3)
    info = ServerInfo("sglang", "0.5.23", "m", 1, 1, 1, spec, 1, False, None, True, {})
    best = w.choice.draft_tokens
    notes = {p.draft_tokens: row(info, p, best, w)["notes"] for p in w.predictions}
    assert notes[1] == "within interval" and notes[2] == "measured, best"
    assert row(info, w.at(1), best)["notes"] == ""  # without the what-if, no reason to give
    assert summary(info, w)[-1].endswith(f"beyond its interval ({why})")


def test_the_w_screens_ab_line_names_another_servers_ab_as_check_does() -> None:
    """Issue 38: `w`'s by-load half wrote an A/B of another server as this one's; it goes
    through `ab_lines` with the watched URL, as `check` does."""
    ab = StoredAb(16, 1000.0, (), Crossover(None, None, None), "http://10.0.0.2:8000")
    for bands in ((), (LoadBand(1, 60.0, 3.0, 1.0, False, 2.5, 60.0, 60.0),)):
        lines = by_load_lines(bands, ab, 1004.0, "http://10.0.0.1:8000")
        assert "ab #16 on http://10.0.0.2:8000, 4s ago: " in lines, lines
        assert "ab #16, 4s ago: " in by_load_lines(bands, ab, 1004.0, "http://10.0.0.2:8000")
