"""An httpx transport over aiohttp's client: a request at about a third of httpcore's CPU.

httpx stays the API of every source (timeouts, headers, streaming, content decoding, and the
typed errors of `http.get`); only the connection pool and the HTTP/1.1 parsing are aiohttp's,
which specmon already depends on (the agent, the simulator). The dashboard polls `/metrics`
every second for hours: httpx's default transport (httpcore, h11, anyio) spent ~0.5 ms of CPU
on each, aiohttp ~0.15 ms (docs/performance.md). The live probe's stream goes through it too:
anyio's socket stream paused and resumed reading (two epoll calls) and armed a timeout at every
read, ~0.5 ms of CPU per stream event against ~0.35 here.

aiohttp's errors become the httpx errors httpcore raises for the same failure, with the
original as their cause (ConnectionRefusedError, an ssl error …), so `describe_transport_error`
says the same thing whichever transport ran.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import aiohttp
import httpx

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


class _Body(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx reads it (raw: httpx decodes it)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self.response = response
        self.request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _httpx_error(exc, self.request)  # noqa: B904 (its cause is set)

    async def aclose(self) -> None:
        # A body left unread (one refused as too large) must not go back to the pool with its
        # connection: the next request would read the rest of it.
        if self.response.content.at_eof():
            self.response.release()
        else:
            self.response.close()


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

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request; the response streams its body."""
        if self._session is None:
            self._session = self._new_session()
        timeouts = request.extensions.get("timeout", {})
        try:
            response = await self._session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=await request.aread() or None,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    sock_connect=timeouts.get("connect"),
                    sock_read=timeouts.get("read"),
                ),
            )
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _httpx_error(exc, request)  # noqa: B904 (its cause is set)
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

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None
