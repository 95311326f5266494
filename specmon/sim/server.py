"""`SimServer`: the simulated SGLang server on loopback, built on aiohttp's AppRunner + TCPSite.

It runs inside whatever asyncio loop starts it (tests, the CLI, `SimThread`), answers the routes
of the configured version, and can restart on the same port with fresh counters, hang, force
statuses and break streams (`faults`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import secrets
import ssl
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace

from aiohttp import web

from specmon.agent import CONTENT_TYPE as AGENT_CONTENT_TYPE
from specmon.agent import render_metrics
from specmon.sim import llamacpp, serverinfo, trtllm, vllm
from specmon.sim.config import Flavor, SimConfig
from specmon.sim.decode import DecodeModel
from specmon.sim.engine import Engine, EngineHooks, SimRequest
from specmon.sim.faults import Faults, intercept, rewrite_metrics, trickle
from specmon.sim.gpus import simulated_telemetry
from specmon.sim.metrics import CONTENT_TYPE_OPENMETRICS, CONTENT_TYPE_TEXT
from specmon.sim.native import handle_generate
from specmon.sim.observe import Observer
from specmon.sim.openai_api import handle_openai
from specmon.sim.record import EmittedRequest, append_jsonl
from specmon.sim.sse import json_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MAX_EMITTED = 500
"""Finished requests whose ground truth `SimServer.emitted` keeps (a long session stays flat)."""

_NOT_FOUND = {"detail": "Not Found"}
_FLUSHED = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)


async def _uvicorn_header(_: web.Request, resp: web.StreamResponse) -> None:
    # Real SGLang runs under uvicorn; clients that log the Server header see the same.
    resp.headers["Server"] = "uvicorn"


class SimState:
    """Everything one server lifetime owns (a restart makes a new one)."""

    def __init__(self, server: SimServer, config: SimConfig, epoch: int, port: int) -> None:
        self.server = server
        self.config = config
        self.flavor = Flavor(config.version)
        self.epoch = epoch
        self.port = port
        self.faults = server.faults
        self.started_wall = time.time()
        # SGLang draws a fresh random_seed per launch (the capture shows it change on restart),
        # at random: a new process with the same flags gets another one too. A given
        # --random-seed stays the same across restarts.
        self.random_seed = (
            config.random_seed
            if config.random_seed is not None
            else random.SystemRandom().randrange(1 << 30)
        )
        loop = asyncio.get_running_loop()
        # What the engine reports to: the metrics of the backend spoken.
        self.sglang: Observer | None = None
        self.vllm: vllm.VllmMetrics | None = None
        self.llamacpp: llamacpp.LlamaCppMetrics | None = None
        self.trtllm: trtllm.TrtllmMetrics | None = None
        # A stand-in scheduler pid for the `pid` label: a restart brings new processes.
        self.scheduler_pid = str(10000 + (config.seed * 7919 + epoch * 131) % 50000)
        hooks: EngineHooks
        if config.backend == "vllm":
            hooks = self.vllm = vllm.VllmMetrics(config, self.started_wall)
        elif config.backend == "llamacpp":
            hooks = self.llamacpp = llamacpp.LlamaCppMetrics(config)
        elif config.backend == "trtllm":
            hooks = self.trtllm = trtllm.TrtllmMetrics(config, self.scheduler_pid)
        else:
            hooks = self.sglang = Observer(config, self.flavor, epoch, loop.time())
        self.engine = Engine(config, self.flavor, hooks, epoch, self.faults)

    @property
    def observer(self) -> Observer:
        """SGLang's metrics and scheduler statistics (an SGLang simulator's only)."""
        if self.sglang is None:
            raise RuntimeError(f"a {self.config.backend} simulator has no SGLang observer")
        return self.sglang

    def finish_record(self, req: SimRequest) -> None:
        """Store the ground truth of a request whose response is over (once: a stream stores
        it before its end is sent, so a client that read the end finds it stored)."""
        if not req.recorded:
            req.recorded = True
            self.server.record(req.record)


class SimServer:
    """A simulated SGLang, vLLM, llama.cpp or TensorRT-LLM server for one asyncio loop.

    Attributes:
        config: The current launch configuration (replaced by `restart(new_config)`).
        emitted: Ground truth of the last `MAX_EMITTED` finished requests, across restarts.
        requests: Every request received, by path, across restarts (what clients cost it).
        faults: Misbehaviour to inject (see `Faults`).
        hung: Set when a request starts hanging under `faults.hang` (tests await it instead of
            sleeping); clear it to wait for the next one.
    """

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.emitted: list[EmittedRequest] = []
        self.requests: Counter[str] = Counter()
        self.faults = Faults()
        self._runner: web.AppRunner | None = None
        self._state: SimState | None = None
        self._port = config.port
        self._epoch = -1
        self._closing = asyncio.Event()
        self.hung = asyncio.Event()

    async def __aenter__(self) -> SimServer:
        """`async with SimServer(config) as sim:` serves for the block, then stops."""
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:30000` (valid once started)."""
        scheme = "https" if self.config.ssl_certfile else "http"
        return f"{scheme}://{self.config.host}:{self._port}"

    @property
    def state(self) -> SimState:
        """The running lifetime's state (engine, observer ...)."""
        if self._state is None:
            raise RuntimeError("SimServer is not running")
        return self._state

    def record(self, rec: EmittedRequest) -> None:
        """Keep a finished request's ground truth (and append it to `record_path`)."""
        self.emitted.append(rec)
        if len(self.emitted) > MAX_EMITTED:
            del self.emitted[0]
        if self.config.record_path:
            append_jsonl(self.config.record_path, rec)

    async def start(self) -> None:
        """Bind and serve (port 0 picks a free port, kept across restarts)."""
        if self._runner is not None:
            raise RuntimeError("SimServer already started")
        self._epoch += 1
        self._closing = asyncio.Event()
        app = web.Application(middlewares=[self._outer, self._fault_layer, self._auth])
        app.on_response_prepare.append(_uvicorn_header)
        state = SimState(self, self.config, self._epoch, self._port)
        self._add_routes(app, state)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        tls = None
        if self.config.ssl_certfile:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(self.config.ssl_certfile, self.config.ssl_keyfile)
        site = web.TCPSite(
            runner, self.config.host, self._port, reuse_address=True, ssl_context=tls
        )
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        for addr in runner.addresses:
            if isinstance(addr, tuple):
                self._port = int(addr[1])
                break
        state.port = self._port
        state.engine.start()
        self._state, self._runner = state, runner

    async def stop(self) -> None:
        """Stop serving; open streams are cut and hung requests released (connection closed)."""
        runner, state = self._runner, self._state
        self._runner = self._state = None
        self._closing.set()
        if state is not None:
            await state.engine.stop()
        if runner is not None:
            await runner.cleanup()

    def pace(self, factor: float) -> None:
        """From the next step on, every decode step and cycle takes `factor` times its configured
        time (a slower machine, a drift over a run); 1 restores the configuration's pace. A
        restart restores it too."""
        if self._state is None:
            raise RuntimeError("the simulator is not running")
        model = DecodeModel.from_config(self.config)
        self._state.engine.model = replace(
            model,
            plain_step_ms=model.plain_step_ms * factor,
            cycle_ms=model.cycle_ms * factor,
        )

    async def restart(self, config: SimConfig | None = None) -> None:
        """Stop and start again on the same port: counters at 0, new startup time and seed.

        Args:
            config: New launch flags (e.g. speculation off for a baseline); the port stays.
        """
        await self.stop()
        if config is not None:
            self.config = config
        await self.start()

    # ------------------------------------------------------------------ middlewares

    @web.middleware
    async def _outer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        state = self._state
        observer = state.sglang if state is not None else None
        endpoint, method = request.path, request.method
        self.requests[endpoint] += 1
        if observer is not None:
            observer.on_http(endpoint, method, None)
        status = 500
        try:
            resp = await handler(request)
            status = resp.status
        except web.HTTPNotFound:
            status = 404
            resp = json_response(_NOT_FOUND, status=404)
        except web.HTTPMethodNotAllowed:
            status = 405
            resp = json_response({"detail": "Method Not Allowed"}, status=405)
        finally:
            if observer is not None:
                observer.on_http(endpoint, method, status)
        return resp

    @web.middleware
    async def _fault_layer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        faulty = await intercept(self.faults, request, self._closing, self.hung)
        if faulty is not None:
            return faulty
        resp = await handler(request)
        if request.path == "/metrics":
            resp = rewrite_metrics(self.faults, resp)
        return await trickle(self.faults, request, resp)

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        key = self.config.api_key
        if key is None or self._exempt(request):
            return await handler(request)
        header = request.headers.get("Authorization", "")
        flavor = Flavor(self.config.version)
        if flavor.at_least("0.5.8"):
            # 0.5.8+: scheme compared case-insensitively, token with compare_digest.
            scheme, _, token = header.partition(" ")
            ok = scheme.lower() == "bearer" and secrets.compare_digest(token, key)
        else:
            ok = header == "Bearer " + key
        if not ok:
            if self.config.backend == "llamacpp":
                error = {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
                return json_response({"error": error}, status=401)
            return json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    def _exempt(self, request: web.Request) -> bool:
        path = request.path
        if self.config.backend == "vllm":
            return not path.startswith("/v1")  # vLLM guards only its /v1 API
        if self.config.backend == "llamacpp":
            return path in ("/health", "/v1/health")
        if request.method == "OPTIONS" or path.startswith(("/health", "/metrics")):
            return True
        return path == "/ready" and Flavor(self.config.version).auth_exempt_ready

    # ------------------------------------------------------------------ routes

    def _add_routes(self, app: web.Application, state: SimState) -> None:
        if state.config.gpus:
            readings = itertools.count()

            async def gpu_metrics(_: web.Request) -> web.StreamResponse:
                busy = state.engine.busy
                telemetry = simulated_telemetry(state.config.gpus, busy, next(readings))
                return web.Response(
                    body=render_metrics(telemetry), headers={"Content-Type": AGENT_CONTENT_TYPE}
                )

            app.router.add_get("/gpu-metrics", gpu_metrics)
        if state.vllm is not None:
            vllm.add_routes(app, state, state.vllm)
            return
        if state.llamacpp is not None:
            llamacpp.add_routes(app, state, state.llamacpp)
            return
        if state.trtllm is not None:
            trtllm.add_routes(app, state, state.trtllm)
            return
        flavor = state.flavor
        r = app.router

        async def info(_: web.Request) -> web.StreamResponse:
            state.observer.refresh_idle(state.engine, state.engine.now())
            return json_response(serverinfo.server_info(state))

        async def model(_: web.Request) -> web.StreamResponse:
            return json_response(serverinfo.model_info(state))

        async def models(_: web.Request) -> web.StreamResponse:
            return json_response(serverinfo.v1_models(state, int(time.time())))

        async def empty_ok(_: web.Request) -> web.StreamResponse:
            return web.Response(status=200)

        async def metrics(request: web.Request) -> web.StreamResponse:
            return self._metrics(request, state)

        async def flush(_: web.Request) -> web.StreamResponse:
            ok = state.engine.flush_cache()
            if ok:
                state.observer.on_flush()
            return web.Response(
                text=_FLUSHED,
                status=200 if ok else 400,
                headers={"Content-Type": "text/plain; charset=utf-8"},
            )

        async def generate(request: web.Request) -> web.StreamResponse:
            return await handle_generate(request, state)

        async def openai(request: web.Request) -> web.StreamResponse:
            return await handle_openai(request, state)

        r.add_get("/get_server_info", info)
        r.add_get("/get_model_info", model)
        if flavor.server_info_route:
            r.add_get("/server_info", info)
            r.add_get("/model_info", model)
        if flavor.ready_route:
            r.add_get("/ready", empty_ok)
        r.add_get("/health", empty_ok)
        r.add_get("/health_generate", empty_ok)
        r.add_get("/v1/models", models)
        r.add_route("GET", "/flush_cache", flush)
        r.add_route("POST", "/flush_cache", flush)
        if state.config.enable_metrics:
            r.add_get("/metrics", metrics)
        r.add_route("POST", "/generate", generate)
        r.add_route("PUT", "/generate", generate)
        r.add_post("/v1/completions", openai)
        r.add_post("/v1/chat/completions", openai)

    def _metrics(self, request: web.Request, state: SimState) -> web.StreamResponse:
        state.observer.refresh_idle(state.engine, state.engine.now())
        state.observer.before_render()
        openmetrics = "application/openmetrics-text" in request.headers.get("Accept", "")
        body = state.observer.store.render(
            state.observer.base_labels(), state.scheduler_pid, openmetrics=openmetrics
        )
        content_type = CONTENT_TYPE_OPENMETRICS if openmetrics else CONTENT_TYPE_TEXT
        return web.Response(body=body.encode(), headers={"Content-Type": content_type})
