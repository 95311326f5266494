"""The real servers the `realserver` tests run against, started by `.ci/run` (or by hand with
`bash ci/realserver/run.sh .venv/bin/pytest -m realserver`), which exports their URLs.

A test skips, saying why, when its server's URL is unset; with SPECMON_REALSERVER_REQUIRED=1
(CI sets it) it fails instead, so CI cannot pass without the servers.

Hook for more real-server tests (the dashboard's, say): take the `real_server` fixture; the test
then runs once per speculative server (vLLM, llama.cpp), with its backend name and URL.
"""

from __future__ import annotations

import pytest
from real_helpers import RealServer, server_url


@pytest.fixture
def vllm_url() -> str:
    """vLLM 0.32.0 on CPU with n-gram speculation (4 tokens)."""
    return server_url("SPECMON_VLLM_URL")


@pytest.fixture
def llamacpp_url() -> str:
    """llama-server with a draft model (at most 4 drafts per step)."""
    return server_url("SPECMON_LLAMACPP_URL")


@pytest.fixture
def llamacpp_plain_url() -> str:
    """The same llama-server without a draft model (the baseline)."""
    return server_url("SPECMON_LLAMACPP_PLAIN_URL")


@pytest.fixture(
    params=[("vllm", "SPECMON_VLLM_URL"), ("llamacpp", "SPECMON_LLAMACPP_URL")],
    ids=["vllm", "llamacpp"],
)
def real_server(request: pytest.FixtureRequest) -> RealServer:
    """Each speculative real server in turn."""
    backend, variable = request.param
    return RealServer(backend, server_url(variable))
