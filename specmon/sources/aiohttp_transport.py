"""aiohttp's client under httpx's API: a watched target's polls and probe stream.

httpx stays the API of every source (its requests, timeouts, headers and the typed errors of
`http.get`); a `PollingClient` sends them through aiohttp, which specmon already depends on
(the agent, the simulator). The dashboard polls `/metrics` every second for hours, a fleet ~35
requests a second: a GET of the simulator's `/metrics` cost 1.76 ms of CPU through httpx's own
transport (httpcore, h11, anyio), 1.54 ms through this one under httpx's client, and 0.84 ms
through `stream` (aiohttp's response read directly, no httpx response or iterators); a live
probe's stream 80, 43 and 34 ms (docs/performance.md). The live probe reads through `stream`.

aiohttp's errors become the httpx errors httpcore raises for the same failure, with the
original as their cause (ConnectionRefusedError, an ssl error …), so `describe_transport_error`
says the same thing whichever transport ran.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import httpx
from aiohttp.http_exceptions import ContentEncodingError

# Most specific first: e.g. a connect timeout is also a ServerTimeoutError.
_ERRORS: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientConnectorError, httpx.ConnectError),
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),
    (aiohttp.ClientOSError, httpx.ReadError),
    (TimeoutError, httpx.ReadTimeout),
)


def _httpx_error(exc: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx error for an aiohttp one; a failed connect says what its OSError said."""
    kind = next((to for frm, to in _ERRORS if isinstance(exc, frm)), httpx.NetworkError)
    cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    error = kind(str(cause) or type(cause).__name__, request=request)
    error.__cause__ = cause
    return error


async def _chunks(response: aiohttp.ClientResponse, request: httpx.Request) -> AsyncIterator[bytes]:
    """An aiohttp response's body as it arrives; its failures are httpx's errors."""
    try:
        async for chunk in response.content.iter_any():
            yield chunk
    except aiohttp.ClientPayloadError as exc:
        if isinstance(exc.__cause__, ContentEncodingError):
            raise httpx.DecodingError(str(exc.__cause__), request=request) from exc
        raise _httpx_error(exc, request)  # noqa: B904 (its cause is set)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise _httpx_error(exc, request)  # noqa: B904 (its cause is set)


def _release(response: aiohttp.ClientResponse) -> None:
    # A body left unread (one refused as too large) must not go back to the pool with its
    # connection: the next request would read the rest of it.
    if response.content.at_eof():
        response.release()
    else:
        response.close()


class _Body(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx reads it (raw: httpx decodes it)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self.response = response
        self.request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in _chunks(self.response, self.request):
            yield chunk

    async def aclose(self) -> None:
        _release(self.response)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests with one aiohttp session (made on first use, in the running loop)."""

    def __init__(self, *, verify: bool) -> None:
        """Args:
        verify: Verify TLS certificates (httpx's CA bundle); False for plain http or `--insecure`.
        """
        self.verify = verify
        self._session: aiohttp.ClientSession | None = None

    def _new_session(self) -> aiohttp.ClientSession:
        context: ssl.SSLContext | bool = False
        if self.verify:
            context = httpx.create_ssl_context()
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context),
            auto_decompress=False,  # httpx decodes, and reports a bad encoding as it always has
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),  # httpx sets its own
        )

    async def _send(self, request: httpx.Request, *, decode: bool) -> aiohttp.ClientResponse:
        """Send one request; `decode`: aiohttp decodes gzip and deflate (asked for those only)."""
        if self._session is None:
            self._session = self._new_session()
        timeouts = request.extensions.get("timeout", {})
        headers = request.headers.multi_items()
        if decode:
            headers = [(k, v) for k, v in headers if k != "accept-encoding"]
            headers.append(("accept-encoding", "gzip, deflate"))
        try:
            return await self._session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=await request.aread() or None,
                allow_redirects=False,
                auto_decompress=decode,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    sock_connect=timeouts.get("connect"),
                    sock_read=timeouts.get("read"),
                ),
            )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _httpx_error(exc, request)  # noqa: B904 (its cause is set)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request; the response streams its body."""
        response = await self._send(request, decode=False)
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            stream=_Body(response, request),
            request=request,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode(),
            },
        )

    @asynccontextmanager
    async def stream(
        self, request: httpx.Request
    ) -> AsyncIterator[tuple[aiohttp.ClientResponse, AsyncIterator[bytes]]]:
        """Send one request, no httpx response made: aiohttp's, and its body decoded."""
        response = await self._send(request, decode=True)
        try:
            yield response, _chunks(response, request)
        finally:
            _release(response)

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None
