"""A llama-server build that speculates by default gets an explicit "no speculation" in the
baseline `ab` and `launch` derive (llama.cpp PR #28391: default `ngram-mod`, `--no-spec-type`).

The CI build (b1-0c1e570) has neither the default nor the flag: its real `--help` is the
fixture; a build with them is a script printing that help changed accordingly.
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import pytest

from specmon.cli.ab import split_of
from specmon.launch.llamacpp_help import plain_words, read_plain_words

HELP = (Path(__file__).parent.parent / "fixtures" / "llamacpp-cpu" / "help_speculative").read_text()
PAD = " " * 40  # the help's description column
NGRAM_DEFAULT = HELP.replace(f"(default:\n{PAD}none)", f"(default:\n{PAD}ngram-mod)")
WITH_FLAG = NGRAM_DEFAULT.replace(
    "--spec-type none,", f"--no-spec-type{PAD[14:]}remove every type\n--spec-type none,"
)


def test_the_ci_build_does_not_speculate_by_default() -> None:
    assert NGRAM_DEFAULT != HELP  # the fixture holds the default where it is looked for
    assert plain_words(HELP) == ()


def test_a_build_speculating_by_default_is_told_not_to() -> None:
    assert plain_words(NGRAM_DEFAULT) == ("--spec-type", "none")
    assert plain_words(WITH_FLAG) == ("--no-spec-type",)


def _binary(tmp_path: Path, help_text: str) -> str:
    (tmp_path / "help.txt").write_text(help_text)
    path = tmp_path / "llama-server"
    path.write_text(f"#!/bin/sh\ncat '{tmp_path / 'help.txt'}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_ab_derives_a_plain_baseline_from_such_a_build(tmp_path: Path) -> None:
    binary = _binary(tmp_path, WITH_FLAG)
    command = ["--", binary, "-m", "t.gguf", "-md", "d.gguf", "--spec-type", "draft-simple"]
    split = split_of(argparse.Namespace(server_command=command))
    assert split.baseline.argv == (binary, "-m", "t.gguf", "--no-spec-type")
    assert split.baseline_only == ("--no-spec-type",)
    assert any("speculates by default" in note for note in split.notes)
    plain = split_of(argparse.Namespace(server_command=["--", _binary(tmp_path, HELP), "-md", "d"]))
    assert plain.baseline_only == () and not any("by default" in n for n in plain.notes)


def test_an_unreadable_help_is_a_note_not_a_failure(tmp_path: Path) -> None:
    words, note = read_plain_words([str(tmp_path / "llama-server")])
    assert words == () and note is not None and "could not read" in note


@pytest.mark.realserver
def test_the_real_ci_build_reads_as_not_speculating() -> None:
    binary = os.environ.get("SPECMON_LLAMA_SERVER")
    if not binary:
        pytest.skip("SPECMON_LLAMA_SERVER unset: the CI llama-server build is not here")
    assert read_plain_words([binary]) == ((), None)
