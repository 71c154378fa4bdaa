"""Which Host and Origin a local web face answers: the one owner of the DNS-rebinding rule.

A page served on 127.0.0.1 can be read by any web site the user visits once that site's name resolves to
127.0.0.1 (DNS rebinding): the browser then sends `Host: attacker.example:PORT` and the attacker's
`Origin`. A loopback server therefore answers only requests addressed to one of its own names and port.
The MCP face feeds `allowed_hosts` to its SDK's check; `agentrel view` uses `addressed_to_us` below.
Pure: no I/O but the wildcard case's lookup of this machine's own names.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from contextlib import suppress
from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")  # what a local client puts in its Host header
WILDCARDS = ("", "0.0.0.0", "::")  # bind every interface; never a Host a client sends


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The Host header values a legitimate client may send (without the port), for a server bound
    on `host`."""
    names = [host, *extra]
    if is_loopback(host):
        names += LOOPBACK_HOSTS
    elif host in WILDCARDS:  # every interface: this machine's name and addresses
        names = [*extra, *LOOPBACK_HOSTS, socket.gethostname()]
        with suppress(OSError):
            names += [str(a[4][0]) for a in socket.getaddrinfo(socket.gethostname(), None)]
    bracketed = (f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names if n)
    return list(dict.fromkeys(bracketed))


def _split(authority: str) -> tuple[str, int | None] | None:
    """`name:port` (or `[v6]:port`, or a bare name) as (lower-cased name, port); None when malformed."""
    try:
        parts = urlsplit("//" + authority)
        port = parts.port
    except ValueError:
        return None
    name = (parts.hostname or "").lower()
    if not name or parts.username is not None or parts.path:
        return None
    return (f"[{name}]" if ":" in name else name), port


def addressed_to_us(host: str | None, origin: str | None, hosts: Sequence[str], port: int) -> str | None:
    """Why a request is refused (one sentence), or None when its Host is one of `hosts` on `port` and its
    Origin, when it has one, is an http(s) page of the same. A missing Host is refused: HTTP/1.1 requires
    it, and without it the check could not be made."""
    names = {h.lower() for h in hosts}

    def ours(authority: str, default_port: int) -> bool:
        split = _split(authority)
        return split is not None and split[0] in names and (split[1] or default_port) == port

    if not host or not ours(host, 80):
        return f"Host {host!r} is not this server's address; open http://127.0.0.1:{port}/"
    if origin is not None:
        scheme, _, authority = origin.partition("://")
        if scheme not in ("http", "https") or not ours(authority, 80 if scheme == "http" else 443):
            return f"Origin {origin!r} is not this server's page; open http://127.0.0.1:{port}/"
    return None
