"""SGLang's own argument parser as flag rules, when the `specmon[sglang]` extra is installed.

Imported lazily: `sglang.srt.server_args` pulls in torch and SGLang's kernels, seconds of import
that only an SGLang command needs, and it may be missing or broken (a torch it does not match).
"""

from __future__ import annotations

import argparse

from specmon.launch.flags import FlagRules, parser_rules


def _speculative_dest(dest: str) -> bool:
    return dest.startswith("speculative_") or dest == "enable_multi_layer_eagle"


def sglang_rules() -> FlagRules | None:
    """Rules from SGLang's `ServerArgs.add_cli_args`; None when SGLang cannot be imported."""
    try:
        from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found,unused-ignore]

        version = getattr(__import__("sglang"), "__version__", "?")
        parser = argparse.ArgumentParser(add_help=False)
        ServerArgs.add_cli_args(parser)
    except Exception:  # any failure to load SGLang means: the maintained list
        return None
    return parser_rules(parser, _speculative_dest, f"SGLang {version}'s own parser")
