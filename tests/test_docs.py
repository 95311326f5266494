"""What the documentation and `--help` say agrees with the code."""

from __future__ import annotations

from pathlib import Path

from specmon.cli import build_parser
from specmon.config import DEFAULT_HOST, DEFAULT_PORT

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_help_and_readme_name_every_server_and_the_default_address() -> None:
    help_text = " ".join(build_parser().format_help().split())  # argparse wraps lines anywhere
    readme = " ".join(README.read_text(encoding="utf-8").split())
    for text in (help_text, readme):
        assert "SGLang" in text and "vLLM" in text and "llama-server" in text
        assert f"{DEFAULT_HOST}:{DEFAULT_PORT}" in text
