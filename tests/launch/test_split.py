"""The speculative/baseline split of a launch command, per backend, with each set of flag rules."""

from __future__ import annotations

import importlib.util

import pytest

from specmon.errors import TargetError
from specmon.launch.flags import SGLANG, parser_rules
from specmon.launch.sglang_parser import sglang_rules
from specmon.launch.split import (
    Launch,
    ServerKind,
    Split,
    address,
    rules_for,
    server_kind,
    split_command,
)
from specmon.sim.__main__ import build_parser

SGL = ["python", "-m", "sglang.launch_server", "--model-path", "m"]


def minus_removed(split: Split) -> list[str]:
    """The speculative argv minus the removed words, as a sequence (order kept)."""
    removed = [w for w in split.removed if w not in split.baseline.unset]
    out, i = [], 0
    for word in split.speculative.argv:
        if i < len(removed) and word == removed[i]:
            i += 1
            continue
        out.append(word)
    assert i == len(removed), "every removed word comes from the speculative command"
    return out


def assert_exact(split: Split) -> None:
    """The baseline is exactly the speculative command minus its speculative flags (the pins
    are on both already), plus what the baseline alone needs."""
    assert list(split.baseline.argv) == minus_removed(split) + list(split.baseline_only)
    for pin in split.pins:
        if pin.value is not None:
            for argv in (split.speculative.argv, split.baseline.argv):
                i = argv.index(pin.flag)
                assert argv[i + 1] == pin.value
        else:
            assert pin.flag not in split.speculative.argv + split.baseline.argv


def test_sglang_every_form_of_speculative_flag_goes() -> None:
    split = split_command(
        [
            *SGL,
            "--speculative-algorithm=EAGLE3",
            "--speculative-draft-model-path",
            "d",
            "--speculative-num-steps",
            "3",
            "--enable-multi-layer-eagle",
            "--speculative-use-rejection-sampling",
            "--speculative-accept-threshold-single",
            "-0.5",
            "--tp",
            "8",
            "--max-running-requests",
            "32",
        ],
        {},
    )
    assert split.kind == ServerKind.SGLANG
    assert split.baseline.argv == (*SGL, "--tp", "8", "--max-running-requests", "32")
    assert split.removed == (
        "--speculative-algorithm=EAGLE3",
        "--speculative-draft-model-path",
        "d",
        "--speculative-num-steps",
        "3",
        "--enable-multi-layer-eagle",
        "--speculative-use-rejection-sampling",
        "--speculative-accept-threshold-single",
        "-0.5",
    )
    assert split.pins == ()  # --max-running-requests given: nothing to pin
    assert_exact(split)


def test_sglang_pins_max_running_requests_and_mixed_chunk_on_both() -> None:
    split = split_command(
        [*SGL, "--enable-mixed-chunk", "--speculative-algorithm", "NGRAM", "--port", "30001"],
        {},
    )
    assert [(p.flag, p.value) for p in split.pins] == [
        ("--max-running-requests", "48"),
        ("--enable-mixed-chunk", None),
    ]
    assert split.speculative.argv == (
        *SGL,
        "--speculative-algorithm",
        "NGRAM",
        "--port",
        "30001",
        "--max-running-requests",
        "48",
    )
    assert split.baseline.argv == (*SGL, "--port", "30001", "--max-running-requests", "48")
    assert any("--mem-fraction-static" in note for note in split.notes)
    assert any("--disable-overlap-schedule" in note for note in split.notes)
    assert_exact(split)


def test_sglang_spec_v2_env_is_unset_for_the_baseline_only() -> None:
    split = split_command(
        [
            "env",
            "SGLANG_ENABLE_SPEC_V2=1",
            "CUDA_VISIBLE_DEVICES=0",
            *SGL,
            "--speculative-algorithm",
            "EAGLE",
        ],
        {"SGLANG_ENABLE_SPEC_V2": "1", "HOME": "/root"},
    )
    assert split.speculative.env == (("SGLANG_ENABLE_SPEC_V2", "1"), ("CUDA_VISIBLE_DEVICES", "0"))
    assert split.baseline.env == (("CUDA_VISIBLE_DEVICES", "0"),)
    assert split.baseline.unset == ("SGLANG_ENABLE_SPEC_V2",)
    env = split.baseline.environ({"SGLANG_ENABLE_SPEC_V2": "1", "HOME": "/root"})
    assert env == {"HOME": "/root", "CUDA_VISIBLE_DEVICES": "0"}
    assert split.baseline.shell().startswith("env -u SGLANG_ENABLE_SPEC_V2 CUDA_VISIBLE_DEVICES=0")
    assert_exact(split)


def test_vllm_speculative_config_in_every_spelling() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": 4}'
    for flag in ("--speculative-config", "--speculative_config"):
        split = split_command(["vllm", "serve", "m", flag, spec, "--max-num-seqs", "8"], {})
        assert split.kind == ServerKind.VLLM
        assert split.baseline.argv == ("vllm", "serve", "m", "--max-num-seqs", "8")
        assert split.pins == ()
        assert_exact(split)
    split = split_command(
        [
            "python",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            "m",
            f"--speculative-config={spec}",
            "--speculative-config.method",
            "ngram",
        ],
        {},
    )
    assert split.baseline.argv == (
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "m",
    )


def test_a_vllm_dynamic_sd_schedule_is_noted() -> None:
    """Dynamic SD forces piecewise CUDA graphs, which slow its K = 0 band too (vLLM #49548)."""
    spec = '{"method": "eagle3", "num_speculative_tokens": 3, ' + (
        '"num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 256, 0]]}'
    )
    split = split_command(["vllm", "serve", "m", "--speculative-config", spec], {})
    assert split.baseline.argv == ("vllm", "serve", "m")
    assert any("piecewise CUDA graphs" in note for note in split.notes)
    plain = split_command(["vllm", "serve", "m", "--speculative-config", '{"method": "x"}'], {})
    assert plain.notes == ()


def test_llamacpp_draft_flags_and_their_values() -> None:
    split = split_command(
        [
            "/opt/llama-server",
            "-m",
            "t.gguf",
            "-md",
            "d.gguf",
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            "4",
            "--draft-min",
            "1",
            "-ngld",
            "99",
            "--cpu-moe-draft",
            "--spec-replace",
            "a",
            "b",
            "--metrics",
            "-np",
            "4",
        ],
        {"LLAMA_ARG_DRAFT_MAX": "8", "LLAMA_ARG_CTX_SIZE": "4096"},
    )
    assert split.kind == ServerKind.LLAMACPP
    assert split.baseline.argv == ("/opt/llama-server", "-m", "t.gguf", "--metrics", "-np", "4")
    assert split.baseline.unset == ("LLAMA_ARG_DRAFT_MAX",)
    assert split.pins == ()
    assert_exact(split)


def test_the_simulator_takes_sglang_names_and_is_told_to_run_plain() -> None:
    split = split_command(
        ["python", "-m", "specmon.sim", "--speculative-algorithm", "NGRAM", "--port", "31000"], {}
    )
    assert split.kind == ServerKind.SIM
    assert split.baseline_only == ("--speculative-algorithm", "none")
    assert split.baseline.argv[-2:] == ("--speculative-algorithm", "none")
    assert_exact(split)
    # Every flag of both commands is one the simulator's parser takes.
    build_parser().parse_args(list(split.speculative.argv[3:]))
    build_parser().parse_args(list(split.baseline.argv[3:]))


def test_rules_read_off_a_real_argparse_parser() -> None:
    # The path SGLang's own parser takes, with the simulator's (SGLang-named) parser.
    rules = parser_rules(build_parser(), lambda dest: dest.startswith("speculative_"), "sim")
    assert rules.arity("--speculative-num-steps") == 1
    assert rules.arity("--enable-metrics") == 0
    assert rules.arity("--speculative-eagle") == 1  # a unique prefix resolves as argparse does
    assert rules.speculative("--speculative-eagle")
    assert not rules.speculative("--tp")
    split = split_command(
        [
            "python",
            "-m",
            "specmon.sim",
            "--enable-metrics",
            "--speculative-num-steps=3",
            "--speculative-eagle-topk",
            "2",
            "--tp",
            "4",
        ],
        {},
        rules,
    )
    assert split.rules == "sim"
    assert split.removed == ("--speculative-num-steps=3", "--speculative-eagle-topk", "2")
    assert_exact(split)


@pytest.mark.skipif(
    importlib.util.find_spec("sglang") is None, reason="the specmon[sglang] extra is not installed"
)
def test_sglangs_own_parser_splits_an_sglang_command() -> None:
    rules = sglang_rules()
    assert rules is not None, "sglang is installed but its ServerArgs parser did not load"
    split = split_command([*SGL, "--speculative-algorithm", "NGRAM", "--tp", "2"], {}, rules)
    assert split.rules.startswith("SGLang ")
    assert split.baseline.argv == (*SGL, "--tp", "2", "--max-running-requests", "48")


def test_without_sglang_the_maintained_list_is_used() -> None:
    if importlib.util.find_spec("sglang") is None:
        assert sglang_rules() is None
        assert rules_for(ServerKind.SGLANG) is SGLANG
    assert rules_for(ServerKind.VLLM).source.startswith("a maintained list (vLLM")


def test_bad_commands_say_why() -> None:
    with pytest.raises(TargetError, match="cannot tell which server"):
        split_command(["python", "serve.py"], {})
    with pytest.raises(TargetError, match="no speculative flag"):
        split_command([*SGL, "--tp", "2"], {})
    with pytest.raises(TargetError, match="no server command"):
        split_command(["FOO=1"], {})
    with pytest.raises(TargetError, match="not a port number"):
        address(Launch((*SGL, "--port", "http")), ServerKind.SGLANG)


def test_address_from_the_command_or_the_servers_default() -> None:
    assert address(Launch((*SGL, "--host", "0.0.0.0", "--port=30005")), ServerKind.SGLANG) == (
        "127.0.0.1",
        30005,
    )
    assert address(Launch(("vllm", "serve", "m")), ServerKind.VLLM) == ("127.0.0.1", 8000)
    assert address(Launch(("llama-server", "--host", "10.0.0.2")), ServerKind.LLAMACPP) == (
        "10.0.0.2",
        8080,
    )


def test_the_kind_is_read_past_a_leading_env() -> None:
    """`env NAME=value python3 -m sglang.launch_server …`, as the H200 script runs it."""
    command = ["env", "PYTHONPATH=/tmp/site", "HF_HUB_OFFLINE=1", *SGL]
    assert server_kind(command) == ServerKind.SGLANG
    assert server_kind(["CUDA_VISIBLE_DEVICES=0", "llama-server", "-m", "m.gguf"]) == (
        ServerKind.LLAMACPP
    )
