"""Per-request acceptance from a real vLLM 0.32.0 (CPU, n-gram) launched with
`--per-request-spec-decode-metrics detailed` (ci/realserver/servers.sh), held against its own
counters.

Each probe's `metrics.speculative_decoding` histogram is vLLM's account of that request alone,
so a probe's acceptance by position no longer needs the probe to run alone: here another
request streams beside the probes, and their histograms plus that request's own add up to the
counters' deltas over the window, position by position, exactly (however much they overlapped:
on a loaded machine the other request can finish before the first probe starts).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from real_helpers import counters, deltas, warm_up

from specmon.analysis.figures import run_figures
from specmon.model import AcceptSource, PositionSource, ProbeResult
from specmon.sources.backends.openai_compat import completions_payload
from specmon.sources.backends.vllm import run_probe
from specmon.sources.http import make_client
from specmon.target import Target

pytestmark = pytest.mark.realserver

RUNS, TOKENS, BACKGROUND_TOKENS = 3, 64, 1000
FLAG = "--per-request-spec-decode-metrics detailed (as ci/realserver/servers.sh launches it)"
# The other request, in a process of its own (a thread would hold the GIL the bench's event loop
# needs, and its chunks would arrive together): "started" after its first chunk, then the
# `metrics.speculative_decoding` of its final usage chunk.
_OTHER = """
import json, sys, httpx
chunks = []
with httpx.stream("POST", sys.argv[1] + "/v1/completions", json=json.loads(sys.argv[2]),
                  timeout=300) as answer:
    for line in answer.iter_lines():
        if line.startswith("data: {"):
            chunks.append(json.loads(line.removeprefix("data: ")))
            if len(chunks) == 1:
                print("started", flush=True)
print(json.dumps((chunks[-1].get("metrics") or {}).get("speculative_decoding") or {}))
"""


async def _probes(url: str) -> list[ProbeResult]:
    async with make_client(Target(url, read_timeout=60)) as client:
        return [await run_probe(client, max_tokens=TOKENS) for _ in range(RUNS)]


def test_details_are_exact_while_other_traffic_runs(
    vllm_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warm_up(capsys, vllm_url, tmp_path)
    before = counters(vllm_url, "vllm:")
    payload = completions_payload("The other request: count to a thousand.", BACKGROUND_TOKENS)
    argv = [sys.executable, "-c", _OTHER, vllm_url, json.dumps(payload)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as other:
        assert other.stdout is not None
        assert other.stdout.readline().strip() == "started"
        results = asyncio.run(_probes(vllm_url))
        background = json.loads(other.stdout.read())
    runs = [run_figures(result) for result in results]
    assert "acceptance_histogram" in background, f"no per-request metrics: launch vLLM with {FLAG}"
    d = deltas(before, counters(vllm_url, "vllm:"))
    assert d["request_success_total"] == RUNS + 1, d  # the probes and the other request
    k = len(background["acceptance_histogram"]) - 1
    for run in runs:
        # vLLM's own figures for the probe, though it did not run alone.
        assert run.position_source == PositionSource.DRAFTING_HISTOGRAM
        assert run.server_accept_source == AcceptSource.DETAILS
        assert run.position_accept is not None and len(run.position_accept) == k
    # Steps that drafted: the probes' and the other request's, as the counters count them.
    drafts = sum(r.position_steps or 0 for r in runs) + background["num_spec_steps"]
    assert drafts == d["spec_decode_num_drafts_total"]
    for i in range(k):
        accepted = sum((r.position_accept or ())[i] * (r.position_steps or 0) for r in runs)
        accepted += sum(background["acceptance_histogram"][i + 1 :])
        assert accepted == pytest.approx(d[f"spec_decode_num_accepted_tokens_per_pos_total[{i}]"])
    # Each probe's accept length is vLLM's 1 + accepted / drafting steps of that request.
    for run in runs:
        taken = sum(a * (run.position_steps or 0) for a in run.position_accept or ())
        assert run.server_accept_length == pytest.approx(1 + taken / (run.position_steps or 1))
