"""Capture what a real vLLM or llama.cpp server answers, for tests/fixtures (stdlib only).

Usage: python capture.py vllm|llamacpp BASE_URL OUT_DIR

Writes each endpoint specmon reads (JSON or text, as served), `/metrics` before and after, and one
streamed probe request exactly as specmon sends it, every line with its client-side arrival time
(`{"meta": {"status", "headers", "t_send"}, "lines": [{"t", "line"}]}`, unix seconds).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

# specmon's default probe prompt (specmon/sources/probe.py).
PROMPT = (
    "Write a detailed, step by step explanation of how a CPU executes an instruction, "
    "from fetch to write-back, with an example for each stage."
)
ENDPOINTS = {
    "vllm": ["/version", "/v1/models", "/server_info?config_format=json", "/metrics"],
    "llamacpp": ["/props", "/v1/models", "/metrics"],
}
PROBES = {
    "vllm": (
        "/v1/completions",
        {
            "prompt": PROMPT,
            "max_tokens": 128,
            "temperature": 0,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        },
    ),
    "llamacpp": (
        "/completion",
        {"prompt": PROMPT, "n_predict": 128, "temperature": 0, "ignore_eos": True, "stream": True},
    ),
}


def fetch(url: str, body: dict[str, Any] | None = None) -> urllib.request.Request:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    return urllib.request.Request(url, data=data, headers=headers)


def save(base: str, path: str, out: Path, name: str) -> None:
    try:
        with urllib.request.urlopen(fetch(base + path), timeout=30) as response:
            (out / name).write_bytes(response.read())
        print(f"{path}: saved as {name}")
    except OSError as exc:  # a 404 is worth knowing, not worth stopping for
        print(f"{path}: {exc}")


def stream(base: str, path: str, body: dict[str, Any], out: Path, name: str) -> None:
    t_send = time.time()
    with urllib.request.urlopen(fetch(base + path, body), timeout=120) as response:
        meta = {"status": response.status, "headers": dict(response.headers), "t_send": t_send}
        lines = [
            {"t": time.time(), "line": raw.decode("utf-8", "replace").rstrip("\n")}
            for raw in response
        ]
    (out / name).write_text(json.dumps({"meta": meta, "lines": lines}, indent=0))
    print(f"{path}: {len(lines)} lines saved as {name}")


def main() -> None:
    kind, base, out = sys.argv[1], sys.argv[2].rstrip("/"), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    for path in ENDPOINTS[kind]:
        name = path.strip("/").split("?")[0].replace("/", "_")
        save(base, path, out, name + ("_before" if name == "metrics" else ""))
    probe_path, body = PROBES[kind]
    stream(base, probe_path, body, out, "probe_stream.json")
    save(base, "/metrics", out, "metrics_after")


if __name__ == "__main__":
    main()
