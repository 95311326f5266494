"""The HTTP client of one target, its credentials, and requests that fail with typed errors."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import stat
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import httpx

from specmon import __version__
from specmon.errors import (
    AuthFailed,
    HttpStatus,
    MalformedResponse,
    ResponseTooLarge,
    TargetError,
    TimedOut,
    Unreachable,
)
from specmon.nesting import TooDeep, loads_json
from specmon.sources.secrets import MASK
from specmon.target import DEFAULT_READ_TIMEOUT, ApiKey, Target

if TYPE_CHECKING:
    from specmon.sources.aiohttp_transport import AiohttpTransport

DEFAULT_API_KEY_ENV = "SPECMON_API_KEY"
MAX_BODY_BYTES = 16 * 2**20
"""The largest answer `get` reads: a real 0.5.17 /metrics at TP 8 is ~65 KB, its server info
~31 KB, dcgm-exporter's for 8 GPUs ~30 KB. A larger body is refused; reading it held up to this
much memory for a moment (and the allocator keeps the pages), so the limit stays modest."""
OFF_LOOP_CHARS = 2**20
"""A body larger than this is read in a worker thread (`off_loop`): a hostile or merely huge
answer (a 10 MB /metrics, a wide /slots) must not hold the event loop (keys, other targets)."""
WHOLE_ANSWER_READS = 2
"""A whole answer of `get` must arrive within this many read timeouts: each read waits at most
one, and a server (or proxy) trickling its answer a few bytes at a time would otherwise hold
a scrape for minutes."""
# Headers that describe the body as it came over the wire, not as `get` hands it on (decoded).
_WIRE_HEADERS = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})


def load_api_key(
    env_name: str | None, key_file: str | None, environ: dict[str, str] | None = None
) -> tuple[ApiKey | None, list[str]]:
    """Find the API key: `--api-key-file`, else the named environment variable.

    Returns:
        The key (or None) and warnings to show (e.g. a key file others can read).

    Raises:
        TargetError: The key file cannot be read or is empty, or a named variable is unset.
    """
    return load_secret(
        env_name,
        key_file,
        default_env=DEFAULT_API_KEY_ENV,
        what="API key",
        env_flag="--api-key-env",
        environ=environ,
    )


def load_secret(
    env_name: str | None,
    secret_file: str | None,
    *,
    default_env: str,
    what: str,
    env_flag: str,
    environ: dict[str, str] | None = None,
) -> tuple[ApiKey | None, list[str]]:
    """Find a secret in a file, else in an environment variable; never on the command line.

    Args:
        env_name: The variable the user named (`env_flag`), or None for `default_env`.
        secret_file: The file the user named, which wins.
        default_env: The variable read when none is named.
        what: What the secret is, for messages ("API key").
        env_flag: The option that names the variable, for messages.
        environ: The environment (tests pass their own).

    Returns:
        The secret (or None) and warnings to show (e.g. a file others can read).

    Raises:
        TargetError: The file cannot be read or is empty, or a named variable is unset.
    """
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    if secret_file is not None:
        path = Path(secret_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8").strip()
            mode = path.stat().st_mode
        except OSError as exc:
            raise TargetError(f"cannot read {what} file {secret_file}: {exc.strerror}") from None
        if not text:
            raise TargetError(f"{what} file {secret_file} is empty")
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            warnings.append(
                f"{what} file {secret_file} is readable by others (mode {stat.S_IMODE(mode):o}); "
                f"chmod 600 it"
            )
        return ApiKey(text, f"file {secret_file}"), warnings
    name = env_name or default_env
    value = env.get(name, "").strip()
    if value:
        return ApiKey(value, f"env {name}"), warnings
    if env_name is not None:
        raise TargetError(f"{env_flag} {env_name}: that environment variable is not set")
    return None, warnings


def verifies_tls(target: Target) -> bool:
    """Whether a target's client checks certificates: an https target not `--insecure`.

    A plain-http target never does TLS (redirects are not followed), so no CA bundle is loaded
    for it: that took ~50 ms of the event loop per client (each `b`, `s`, start).
    """
    return not target.insecure and target.url.startswith("https:")


def make_client(target: Target) -> httpx.AsyncClient:
    """The long-lived client of a target: explicit timeouts, TLS verified unless insecure."""
    return httpx.AsyncClient(**_client_options(target))


def load_client_transport() -> None:
    """Import what httpx imports for a client's first transport (httpcore, h11, anyio: ~60 ms).

    The dashboard polls through aiohttp (`polling_client`), so its first `b` or `s` would pay
    this on the event loop, keys waiting; it runs this in a thread at start instead.
    """
    httpx.AsyncHTTPTransport(verify=False)


def polling_client(target: Target) -> PollingClient:
    """The client of a watched target (server info, /metrics, a GPU endpoint, the live probe's
    stream): its requests go straight to aiohttp's client (`stream`), about half the CPU of
    httpx's own per request and per probe stream event. A probe times each event when it is
    read, whichever client read it. The one-shot benches (`specmon bench`, `check`, the `b`
    key) keep httpx's: they run for seconds, and would pay aiohttp's import."""
    return PollingClient(target)


def _client_options(target: Target) -> dict[str, Any]:
    headers = {"User-Agent": f"specmon/{__version__}"}
    if target.api_key is not None:
        headers["Authorization"] = f"Bearer {target.api_key.value}"
    return {
        "base_url": target.url,
        "headers": headers,
        "timeout": httpx.Timeout(
            connect=target.connect_timeout,
            read=target.read_timeout,
            write=target.read_timeout,
            pool=target.connect_timeout,
        ),
        "verify": verifies_tls(target),
        "follow_redirects": False,
        "trust_env": False,
    }


class PollingClient(httpx.AsyncClient):
    """An httpx client over aiohttp's, whose `stream` skips httpx's layers altogether.

    httpx builds a request (~60 µs), runs its auth, redirect and cookie steps and wraps the
    body in its iterators for every request: over a second's polls of a fleet (~35 requests)
    and ~200 probe stream events that was most of the CPU. `stream` builds each GET's request
    once per path and reads aiohttp's response directly; what it sends and the errors it raises
    are those of the httpx client.
    """

    def __init__(self, target: Target) -> None:
        self._aiohttp = _DeferredAiohttp(verifies_tls(target))
        super().__init__(**_client_options(target), transport=self._aiohttp)
        self._gets: dict[tuple[str, tuple[tuple[str, str], ...]], httpx.Request] = {}

    def get_request(self, path: str, params: dict[str, str] | None) -> httpx.Request:
        """The GET of a path (and query), built once."""
        key = (path, tuple(sorted((params or {}).items())))
        request = self._gets.get(key)
        if request is None:
            request = self._gets[key] = self.build_request("GET", path, params=params)
        return request

    async def transport(self) -> AiohttpTransport:
        """aiohttp's transport, once imported."""
        return await self._aiohttp.loaded()


class _DeferredAiohttp(httpx.AsyncBaseTransport):
    """aiohttp's transport, imported on the first request, in a thread.

    aiohttp takes ~150 ms to import: not at start (every command would pay it before its first
    output), and not on the event loop (keys pressed meanwhile would wait for it).
    """

    def __init__(self, verify: bool) -> None:
        self.verify = verify
        self._loading: asyncio.Future[AiohttpTransport] | None = None
        self._closed = False

    def _load(self) -> AiohttpTransport:
        from specmon.sources.aiohttp_transport import AiohttpTransport

        return AiohttpTransport(verify=self.verify)

    async def loaded(self) -> AiohttpTransport:
        """aiohttp's transport, imported (in a thread) on the first call.

        Raises:
            RuntimeError: The client was closed, before or while aiohttp was imported (httpx's
                own error): aiohttp's transport would open a session that nothing closes.
        """
        if self._loading is None and not self._closed:  # the polls start together: one import
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._load))
        if self._loading is not None:
            transport = await asyncio.shield(self._loading)
            if not self._closed:
                return transport
        raise RuntimeError("Cannot send a request, as the client has been closed.")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send through aiohttp's transport, once it is loaded."""
        return await (await self.loaded()).handle_async_request(request)

    async def aclose(self) -> None:
        """Close aiohttp's transport, if it was loaded; no request is sent after."""
        self._closed = True
        if self._loading is not None:
            await (await self._loading).aclose()


@dataclass(frozen=True, slots=True)
class Answer:
    """A response whose body is being read (`stream`)."""

    request: httpx.Request
    status: int
    raw_headers: Sequence[tuple[bytes, bytes]]
    """As they came, wire headers (content-length, content-encoding …) included."""
    content_type: str
    chunks: AsyncIterator[bytes]
    """The body, decoded (gzip, deflate); transport failures raise httpx's errors."""


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    *,
    params: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Answer]:
    """Send one request and stream its answer: a `PollingClient`'s straight through aiohttp,
    any other client's through httpx.

    Raises:
        httpx.TransportError: The request failed (httpx's error, whichever client sent it).
    """
    if not isinstance(client, PollingClient):
        async with client.stream(
            method, path, params=params, json=body, headers=headers
        ) as response:
            content_type = response.headers.get("content-type", "")
            yield Answer(
                response.request,
                response.status_code,
                response.headers.raw,
                content_type,
                response.aiter_bytes(),
            )
        return
    if method == "GET" and body is None and headers is None:
        request = client.get_request(path, params)
    else:
        request = client.build_request(method, path, params=params, json=body, headers=headers)
    transport = await client.transport()
    async with transport.stream(request) as (response, chunks):
        yield Answer(
            request,
            response.status,
            response.raw_headers,
            response.headers.get("Content-Type", ""),
            chunks,
        )


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def describe_transport_error(exc: httpx.TransportError, url: str) -> Exception:
    """Map an httpx transport failure to a typed error with a readable message."""
    chain = _causes(exc)
    # httpx's ReadError of a reset connection has no text: say what its cause said, if anything.
    text = next((str(c) for c in chain if str(c)), type(exc).__name__)
    if isinstance(exc, httpx.ConnectTimeout):
        return Unreachable(f"{url}: no answer to connect within the connect timeout")
    if isinstance(exc, httpx.TimeoutException):
        return TimedOut(f"{url}: connected, but no answer within the read timeout")
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, ssl.SSLError) for c in chain):
            return Unreachable(f"{url}: TLS failed ({text}); --insecure skips verification")
        if any(isinstance(c, socket.gaierror) for c in chain):
            return Unreachable(f"{url}: host name not found ({text})")
        if any(isinstance(c, ConnectionRefusedError) for c in chain):
            return Unreachable(f"{url}: connection refused (nothing listening?)")
        return Unreachable(f"{url}: cannot connect ({text})")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return Unreachable(f"{url}: the server closed the connection ({text})")
    return Unreachable(f"{url}: {text}")


def check_status(response: httpx.Response) -> None:
    """Raise the typed error an error status stands for (401/403 auth, a redirect or others
    HttpStatus)."""
    status = response.status_code
    if status < 300:
        return
    url = str(response.request.url)
    if status < 400:  # redirects are not followed: the key would go wherever they point
        location = " ".join(response.headers.get("location", "").split())[:200]
        raise HttpStatus(
            f"{url}: HTTP {status}, a redirect to {location or 'nowhere said'}: not followed "
            "(give specmon the address it names)",
            status,
        )
    if status in (401, 403):
        raise AuthFailed(
            f"{url}: HTTP {status} — the API key is "
            + ("wrong" if "authorization" in response.request.headers else "missing")
            + " (set SPECMON_API_KEY, --api-key-env or --api-key-file)"
        )
    detail = response.text.strip().replace("\n", " ")  # callers read the body first
    token = response.request.headers.get("authorization", "").partition(" ")[2]
    if token:  # a server or proxy that echoes the request must not make us print the key
        detail = detail.replace(token, MASK)
    raise HttpStatus(f"{url}: HTTP {status} {detail[:200]}".rstrip(), status)


async def get(
    client: httpx.AsyncClient,
    path: str,
    *,
    limit: int = MAX_BODY_BYTES,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    """GET a path, read whole; transport failures and error statuses become typed errors.

    Args:
        client: The target's client.
        path: The path to read.
        limit: The largest body read (decoded); a larger one is refused, never held whole.
        params: The query.

    Raises:
        ResponseTooLarge: The body is (or says it is) larger than `limit`.
        SourceError: Any other failure, typed.
    """
    url = f"{client.base_url}{path}"
    within = (client.timeout.read or DEFAULT_READ_TIMEOUT) * WHOLE_ANSWER_READS
    try:
        async with asyncio.timeout(within):
            answer, body = await _read(client, path, url, limit, params)
    except TimeoutError:
        raise TimedOut(
            f"{url}: the answer was still arriving after {within:g} s (the server sends it a "
            "trickle at a time)"
        ) from None
    headers = [(k, v) for k, v in answer.raw_headers if k.lower() not in _WIRE_HEADERS]
    response = httpx.Response(answer.status, headers=headers, content=body, request=answer.request)
    check_status(response)
    return response


async def _read(
    client: httpx.AsyncClient, path: str, url: str, limit: int, params: dict[str, str] | None
) -> tuple[Answer, bytes]:
    """The answer and its whole body (`get` without the overall deadline)."""
    retried = False
    while True:
        try:
            async with stream(client, "GET", path, params=params) as answer:
                declared = _header(answer.raw_headers, b"content-length")
                if declared.isdigit() and int(declared) > limit:
                    raise _too_large(url, limit)
                parts: list[bytes] = []
                size = 0
                async for part in answer.chunks:
                    size += len(part)
                    if size > limit:
                        parts.clear()
                        raise _too_large(url, limit)
                    parts.append(part)
            return answer, b"".join(parts)
        except httpx.RemoteProtocolError as exc:
            # Most often a kept-alive connection the server closed just as it was reused
            # (llama-server does, under load): a GET may be sent again, once.
            if retried:
                raise describe_transport_error(exc, url) from None
            retried = True
        except httpx.TransportError as exc:
            raise describe_transport_error(exc, url) from None
        except httpx.DecodingError as exc:
            raise MalformedResponse(f"{url}: the body cannot be decoded ({exc})") from None


def _header(raw: Sequence[tuple[bytes, bytes]], name: bytes) -> str:
    """A header's first value (`name` in lower case), or ""."""
    return next((v.decode("latin-1") for k, v in raw if k.lower() == name), "")


def _too_large(url: str, limit: int) -> ResponseTooLarge:
    return ResponseTooLarge(
        f"{url}: the answer is larger than {limit / 2**20:g} MiB; refused without reading it all"
    )


def parse_json(response: httpx.Response) -> Any:
    """The body as JSON, or MalformedResponse naming the URL (nested too deep included:
    `nesting.loads_json`)."""
    try:
        return loads_json(response.content)
    except TooDeep as exc:
        raise MalformedResponse(
            f"{response.request.url}: the body is not JSON we read ({exc})"
        ) from None
    except ValueError:  # UnicodeDecodeError included
        raise MalformedResponse(f"{response.request.url}: the body is not JSON") from None


_P = ParamSpec("_P")
_T = TypeVar("_T")


async def off_loop(size: int, read: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """`read(*args, **kwargs)` of a body of `size` characters (or bytes): on the loop when it
    is small, else in a worker thread, which gives the loop its turn every switch interval
    (Python-level work such as sifting lines or walking a parsed value; a C parser holds the
    lock for its own part). The one rule for every body a source reads whole.
    """
    if size <= OFF_LOOP_CHARS:
        return read(*args, **kwargs)
    return await asyncio.to_thread(read, *args, **kwargs)


async def parse_json_off_loop(response: httpx.Response) -> Any:
    """`parse_json`, in a worker thread for a body past `OFF_LOOP_CHARS` (`off_loop`): walking
    a wide answer for its depth takes longer than parsing it.

    Raises:
        MalformedResponse: As `parse_json`.
    """
    return await off_loop(len(response.content), parse_json, response)


JSON_INT_LIMIT = 2**63
"""The largest magnitude `json_int` takes: JSON integers have no bound, and a 4,000-digit one
(a hostile server's `tp_size`) overflows the first float it meets."""


JSON_NUMBER_LIMIT = float(2**53)
"""The largest magnitude `json_float` takes: past it a float no longer counts by ones, no real
server reports such a time or count, and 1e308 overflows the first sum it meets."""


def json_float(value: Any) -> float | None:
    """A JSON number as a float, or None for anything else: booleans, NaN and the infinities
    (Python's JSON reads `NaN` and `Infinity`), and numbers past `JSON_NUMBER_LIMIT`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and not -JSON_INT_LIMIT < value < JSON_INT_LIMIT:
        return None  # float() of a 400-digit integer raises
    number = float(value)
    return number if -JSON_NUMBER_LIMIT <= number <= JSON_NUMBER_LIMIT else None


def json_int(value: Any) -> int | None:
    """A JSON integer, or None for anything else (booleans included, and integers past
    `JSON_INT_LIMIT`)."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and -JSON_INT_LIMIT < value < JSON_INT_LIMIT
    ):
        return value
    return None
