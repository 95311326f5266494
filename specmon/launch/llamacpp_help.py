"""Whether a `llama-server` build speculates by default, read from its `--help`.

llama.cpp may turn n-gram speculation on by default (PR #28391, open when read: default
`ngram-mod`, `--spec-type` then additive, `--no-spec-type` to remove every type). The command
minus its speculative flags would then not be a plain server, so the baseline says so itself:
`--no-spec-type` where the build has it, else `--spec-type none` where its default is another
type; nothing where the default is none (the CI build b1-0c1e570: `--spec-type … (default:
none)`, no `--no-spec-type`).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

NO_SPEC_TYPE = "--no-spec-type"
HELP_TIMEOUT_S = 20.0
# The option's line and up to three of its description, to its "(default: TYPE)" (which the help
# may break over two lines).
_SPEC_TYPE_DEFAULT = re.compile(
    r"--spec-type(?![\w-])[^\n]*\n(?:[^\n]*\n){0,3}?[^\n]*\(default:\s*([^)\s]+)"
)


def plain_words(help_text: str) -> tuple[str, ...]:
    """What a baseline command needs so that this build does not speculate (pure)."""
    if re.search(rf"(?<![\w-]){NO_SPEC_TYPE}\b", help_text):
        return (NO_SPEC_TYPE,)
    found = _SPEC_TYPE_DEFAULT.search(help_text)
    if found is not None and found.group(1).rstrip(",") != "none":
        return ("--spec-type", "none")
    return ()


def read_plain_words(argv: Sequence[str]) -> tuple[tuple[str, ...], str | None]:
    """`plain_words` of the build `argv[0]` names, and a note when its help cannot be read
    (the baseline then relies on the build's default)."""
    program = argv[0]
    try:
        done = subprocess.run(  # the user's own server binary, no shell
            [program, "--help"],
            capture_output=True,
            text=True,
            timeout=HELP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), (
            f"could not read `{program} --help` ({exc.__class__.__name__}): the baseline "
            "relies on the build not speculating by default"
        )
    return plain_words(done.stdout + done.stderr), None
