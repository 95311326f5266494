"""The simulated SGLang server: a real HTTP server on loopback with a seeded model of decode.

It speaks SGLang 0.4.6, 0.5.4, 0.5.17 and 0.5.23 (server info, /metrics, native and OpenAI
streams, auth), and with `SimConfig.backend` vLLM 0.32.0, llama.cpp's `llama-server` or
TensorRT-LLM's `trtllm-serve`; it
paces its streams by a model of plain/speculative decoding on absolute deadlines, and records the
ground truth of every request, so that specmon's numbers can be checked exactly.
"""

from specmon.sim.config import SUPPORTED_VERSIONS, SimConfig
from specmon.sim.faults import Faults
from specmon.sim.record import EmittedRequest
from specmon.sim.server import SimServer
from specmon.sim.thread import SimThread

__all__ = ["SUPPORTED_VERSIONS", "EmittedRequest", "Faults", "SimConfig", "SimServer", "SimThread"]
