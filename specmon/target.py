"""Where a server is and how to talk to it: its address (normalised), credentials and timeouts.

Plain values, below every layer that reads or configures a server (config, sources, launch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from specmon.errors import TargetError

DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_READ_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A bearer token whose `repr` and `str` never show it."""

    value: str = field(repr=False)
    origin: str
    """Where it came from ("env SPECMON_API_KEY", "file ~/.key"): safe to print."""

    def __str__(self) -> str:
        return f"<api key from {self.origin}>"


@dataclass(frozen=True, slots=True)
class Target:
    """Where a server is and how to talk to it."""

    url: str
    """Normalised base URL, e.g. "http://10.1.230.174:8000" (no trailing slash)."""
    api_key: ApiKey | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    insecure: bool = False
    """Skip TLS verification (only ever by explicit `--insecure`)."""
    metrics_urls: tuple[str, ...] = ()
    """Behind a router or gateway (`--metrics-url`): the workers whose server info and
    `/metrics` specmon reads, `url` taking only the probe's requests; empty: `url` serves all.
    They share the key, timeouts and TLS setting."""

    def at(self, url: str) -> Target:
        """The same key, timeouts and TLS setting for the server at `url` (a baseline server):
        the workers go only with this target's own address (another server is read directly)."""
        return replace(self, url=url, metrics_urls=self.metrics_urls if url == self.url else ())


API_PATHS = (
    "/v1",
    "/v1/models",
    "/v1/completions",
    "/v1/chat/completions",
    "/metrics",
    "/generate",
    "/health",
    "/server_info",
    "/get_server_info",
    "/get_model_info",
)
"""Paths of a server's own API that a pasted address may end with (`http://host:8000/v1`):
`normalise_url` drops them, as the base address is meant (`api_path` says which was dropped)."""

_MALFORMED_SCHEME = re.compile(r"^(https?)(//|:/(?!/)|:(?![/\d]))", re.IGNORECASE)


def api_path(raw: str) -> str | None:
    """The API path (one of `API_PATHS`) that `normalise_url` drops from `raw`, if any: for
    a command to say that it did."""
    text = raw.strip()
    path = urlsplit(text if "://" in text else "http://" + text).path.rstrip("/")
    return path if path in API_PATHS else None


def normalise_url(raw: str) -> str:
    """Turn "host:port", "host" or "http(s)://host:port/" into a base URL; a known API path
    after it ("/v1", "/metrics": `API_PATHS`) is dropped.

    Raises:
        TargetError: The text is not a usable http(s) address.
    """
    text = raw.strip()
    if not text:
        raise TargetError("empty server address")
    malformed = _MALFORMED_SCHEME.match(text)
    if malformed:
        scheme = malformed.group(1)
        meant = f"{scheme.lower()}://{text[len(scheme) :].lstrip(':/')}"
        raise TargetError(
            f"{raw!r} looks like a malformed URL (a ':' or '/' missing after {scheme}): "
            f"did you mean {meant}?"
        )
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unbalanced IPv6 bracket
        raise TargetError(f"not an address: {raw!r} ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise TargetError(
            f"unsupported scheme {parts.scheme!r} in {raw!r}: use http:// or https://"
        )
    try:
        port = parts.port
    except ValueError:
        raise TargetError(f"bad port in {raw!r}") from None
    if not parts.hostname:
        raise TargetError(f"no host in {raw!r}")
    path = parts.path.rstrip("/")
    if parts.query or parts.fragment or (path and path not in API_PATHS):
        raise TargetError(
            f"give the server's base address, without a path: {raw!r} "
            f"(e.g. {parts.scheme}://{parts.netloc})"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
