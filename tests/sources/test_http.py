"""Targets, API keys and transport errors: every bad input gets a clear, typed message."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from specmon.errors import TargetError, TimedOut, Unreachable
from specmon.sources.http import describe_transport_error, get, load_api_key, make_client
from specmon.target import ApiKey, Target, normalise_url


@pytest.mark.parametrize(
    ("raw", "url"),
    [
        ("10.1.230.174:8000", "http://10.1.230.174:8000"),
        ("http://host:30000/", "http://host:30000"),
        ("https://gpu-box", "https://gpu-box"),
        ("[::1]:8000", "http://[::1]:8000"),
        # A pasted API path is the server's base address meant (the CLI says it dropped it).
        ("http://host:8000/v1", "http://host:8000"),
        ("host:8000/v1/", "http://host:8000"),
        ("https://host/v1/chat/completions", "https://host"),
        ("host:30000/metrics", "http://host:30000"),
        ("host:30000/generate", "http://host:30000"),
    ],
)
def test_normalise_url(raw: str, url: str) -> None:
    assert normalise_url(raw) == url


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty"),
        ("ftp://h", "scheme"),
        ("h:99999", "port"),
        ("http://h/api/x", "without a path: 'http://h/api/x' \\(e.g. http://h\\)"),
        ("http://h:1/v1?x=1", "path"),
        ("http//h:8000", "malformed URL .* did you mean http://h:8000\\?"),
        ("https:/h", "malformed URL .* did you mean https://h\\?"),
        ("http:h:80", "malformed URL"),
        ("http://:80", "no host"),
        ("[", "not an address"),
        ("http://[::1:80", "not an address"),
    ],
)
def test_bad_urls(raw: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        normalise_url(raw)


def test_key_from_default_env() -> None:
    key, warnings = load_api_key(None, None, {"SPECMON_API_KEY": "sk-1"})
    assert key is not None and key.value == "sk-1" and not warnings
    assert "sk-1" not in repr(key) and "sk-1" not in str(key)


def test_named_env_must_exist() -> None:
    with pytest.raises(TargetError, match="MY_KEY"):
        load_api_key("MY_KEY", None, {})


def test_key_file_and_loose_permissions(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("sk-file\n")
    os.chmod(path, 0o600)
    key, warnings = load_api_key(None, str(path), {})
    assert key is not None and key.value == "sk-file" and warnings == []
    os.chmod(path, 0o644)
    _, warnings = load_api_key(None, str(path), {})
    assert warnings and "chmod 600" in warnings[0]


def test_missing_and_empty_key_files(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="cannot read"):
        load_api_key(None, str(tmp_path / "nope"), {})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(TargetError, match="empty"):
        load_api_key(None, str(tmp_path / "empty"), {})


async def test_client_sends_bearer_and_timeouts() -> None:
    client = make_client(Target("http://h:1", ApiKey("sk-9", "test"), 2.0, 5.0))
    async with client:
        assert client.headers["authorization"] == "Bearer sk-9"
        assert client.timeout.connect == 2.0 and client.timeout.read == 5.0


async def test_connection_refused_is_unreachable() -> None:
    async with make_client(Target("http://127.0.0.1:9")) as client:
        with pytest.raises(Unreachable, match="refused"):
            await get(client, "/server_info")


async def test_read_timeout_is_timed_out() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    transport = httpx.MockTransport(handler)
    async with httpx.AsyncClient(transport=transport, base_url="http://s") as client:
        with pytest.raises(TimedOut, match="no answer within the read timeout"):
            await get(client, "/server_info")


async def test_dns_failure_is_unreachable() -> None:
    async with make_client(Target("http://nonexistent.invalid:80")) as client:
        with pytest.raises(Unreachable, match="host name not found"):
            await get(client, "/server_info")


async def test_get_sends_again_once_on_a_connection_closed_under_it() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) in (1, 3, 4):  # a reused keep-alive connection the server had closed
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        return httpx.Response(200, text="ok")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://s") as c:
        assert (await get(c, "/metrics")).text == "ok"
        with pytest.raises(Unreachable, match="the server closed the connection"):
            await get(c, "/metrics")  # twice in a row: a real failure
    assert calls == ["/metrics"] * 4


def test_a_reset_without_text_is_named() -> None:
    """httpx's ReadError of a reset connection has an empty message; its cause is said instead."""
    try:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError as reset:
            raise httpx.ReadError("") from reset
    except httpx.ReadError as exc:
        error = describe_transport_error(exc, "http://s/generate")
    assert str(error) == (
        "http://s/generate: the server closed the connection ([Errno 104] Connection reset by peer)"
    )
    bare = describe_transport_error(httpx.ReadError(""), "http://s/generate")
    assert str(bare) == "http://s/generate: the server closed the connection (ReadError)"
