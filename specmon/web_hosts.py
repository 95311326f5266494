"""The Host names `specmon web` and `specmon agent` answer to: this machine's, and the ones the
user adds (`--allow-host`).

A browser sends, in Host, the name it was asked to open. A page on a name whose owner points it
at 127.0.0.1 (DNS rebinding) is same-origin with itself, so its Origin and Host agree; only a
list of this machine's names tells such a request from the user's own.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import socket

import psutil  # type: ignore[import-untyped]  # no stubs installed (as sources/host.py)

# `name`, `name:port`, `[v6]:port`; nothing else (no user info, no path).
_HOST = re.compile(r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<name>[\w.-]+))(?::\d{1,5})?", re.ASCII)
_NAME = re.compile(r"[\w.-]+", re.ASCII)
LOOPBACK_NAMES = frozenset(("localhost", "127.0.0.1", "::1"))
_EVERY_INTERFACE = frozenset(("0.0.0.0", "::", ""))


def host_name(host: str) -> str | None:
    """The name in a Host header (`name`, `name:port`, `[v6]:port`), as `plain_name` writes it;
    None if it is not of that form."""
    found = _HOST.fullmatch(host)
    if found is None:
        return None
    return plain_name(found.group("ip6") or found.group("name"))


def plain_name(name: str) -> str | None:
    """A host name in lower case, or an address as Python writes it (`::1`, not `0:0::1`);
    None if it is neither."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name.lower() if _NAME.fullmatch(name) else None


def allowed_hosts(bind: str, added: list[str]) -> frozenset[str]:
    """The names a request to a server bound to `bind` may use: the loopback names, `bind`
    itself (0.0.0.0 too: the address `specmon web` prints), every address and the names of
    this machine when bound to all of them, and
    `added` (`--allow-host`, as `plain_name` writes them)."""
    names = set(LOOPBACK_NAMES) | set(added) | {plain_name(bind) or ""}
    if bind in _EVERY_INTERFACE:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        for addresses in psutil.net_if_addrs().values():
            for address in addresses:
                if address.family in (socket.AF_INET, socket.AF_INET6):
                    names.add(plain_name(address.address.split("%", 1)[0]) or "")  # no zone
    names.discard("")
    return frozenset(names)


def reachable_hosts(bind: str) -> list[str]:
    """Where another machine reaches a server bound to `bind`, best first: bound to every
    interface, this machine's addresses (IPv4 first; IPv6 too when bound to `::`; neither
    loopback nor link-local) and then its name; else `bind` itself."""
    if bind not in _EVERY_INTERFACE:
        return [bind]
    families = {socket.AF_INET} | ({socket.AF_INET6} if bind != "0.0.0.0" else set())
    found: list[str] = []
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family not in families:
                continue
            ip = ipaddress.ip_address(address.address.split("%", 1)[0])
            if not (ip.is_loopback or ip.is_link_local) and str(ip) not in found:
                found.append(str(ip))
    found.sort(key=lambda text: ":" in text)  # IPv4 first, in the order the system lists them
    return [*found, socket.gethostname()]


def is_loopback(bind: str) -> bool:
    """Whether only this machine can reach an address."""
    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return False  # a host name: whoever resolves it may reach it


def allowed_name(text: str) -> str:
    """A host name or address for `--allow-host`, without a port."""
    name = plain_name(text.removeprefix("[").removesuffix("]"))
    if name is None:
        raise argparse.ArgumentTypeError(f"not a host name (no scheme, port or path): {text!r}")
    return name


def names_this_host(host_header: str, hosts: frozenset[str]) -> bool:
    """Whether a request's Host header names one of `hosts` (at any port)."""
    return host_name(host_header) in hosts
