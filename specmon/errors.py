"""Typed errors: every failure a source can meet, each with a message a person can act on.

Sources raise these and nothing else; the CLI prints `str(error)` (one line, never a traceback)
and maps the class to an exit code. A message may quote what a server sent (an error body, a
stream's error event): it is made safe text where the error is made (`safe_text`: escapes shown,
not sent; cut at `safe_text.LIMIT`).
"""

from __future__ import annotations

from specmon.safe_text import safe_text


class SpecmonError(Exception):
    """Base class: `str()` is a one-line message naming the cause, safe to print."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(safe_text(arg) if isinstance(arg, str) else arg for arg in args))


class UnknownBackend(SpecmonError):
    """A backend's name that no installed backend has (`backend_facts.facts`)."""


class TargetError(SpecmonError):
    """A target URL or option that cannot be used (bad scheme, unreadable key file …)."""


class SourceError(SpecmonError):
    """A server could not be read."""


class Unreachable(SourceError):
    """Nothing answered: connection refused, DNS failure, TLS failure, or a connect timeout."""


class TimedOut(SourceError):
    """The server accepted the connection but did not answer in time."""


class AuthFailed(SourceError):
    """The server answered 401 or 403: the API key is missing or wrong."""


class HttpStatus(SourceError):
    """The server answered with an unexpected HTTP status.

    Attributes:
        status: The HTTP status code.
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class NotThisServer(SourceError):
    """The server answered, but is not the kind of server a backend reads (detection moves on)."""


class NotSGLang(NotThisServer):
    """The server answered, but not like SGLang (no server-info route)."""


class NotVllm(NotThisServer):
    """The server answered, but not like vLLM (no `/version`)."""


class NotLlamaCpp(NotThisServer):
    """The server answered, but not like llama.cpp's `llama-server` (no `/props`)."""


class WorkersDisagree(SourceError):
    """Behind a router (`--metrics-url`), the workers serve different backends, models or
    speculative configurations: their counters cannot be summed as one server's."""


class MetricsDisabled(SourceError):
    """`/metrics` answered 404: the server runs without `--enable-metrics`."""


class MalformedResponse(SourceError):
    """A body that could not be parsed (bad JSON, bad metrics text, bad SSE)."""


class ResponseTooLarge(SourceError):
    """An answer larger than specmon reads (refused before it was read whole)."""


class ProbeError(SourceError):
    """The probe's stream failed after it started."""


class StreamErrorEvent(ProbeError):
    """The server sent `{"error": …}` in the middle of the stream."""


class StreamTruncated(ProbeError):
    """The stream ended (or the connection dropped) before the final chunk and `[DONE]`."""
