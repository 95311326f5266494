"""specmon: a live monitor for speculative-decoding LLM servers."""

__version__ = "0.1.0"
