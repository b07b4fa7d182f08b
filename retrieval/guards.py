"""Guards on every outbound fetch: which URLs and which addresses a page may come from.

Evidence URLs come from search results, i.e. from strangers. Without these checks a result (or a
redirect it triggers) could make the product read ``file://`` paths, cloud metadata endpoints
(169.254.169.254) or services on the private network. Addresses are checked after DNS resolution
and again at every redirect hop, and the connection is then pinned to the checked address so a
second DNS answer cannot swap it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field

import httpx

from m3d_agents.errors import InputError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(InputError):
    """A URL or the address it resolves to is not allowed."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        super().__init__("url", f"refused {url!r}: {problem}")


_loopback_for_tests = False


def allow_loopback_in_tests(allowed: bool = True) -> None:
    """Let guards built from now on in this process reach loopback servers.

    Only tests and benchmarks call this, in their own process, to drive the real run paths
    (``m3d evaluate`` and the rest) against providers served on 127.0.0.1. No configuration,
    environment variable or command-line option reaches it.
    """
    global _loopback_for_tests
    _loopback_for_tests = allowed


def _loopback_default() -> bool:
    return _loopback_for_tests


@dataclass(frozen=True)
class FetchGuard:
    """Allows public http(s) addresses only.

    ``allow_loopback`` exists for tests that serve saved pages from their own loopback server; no
    config file or command-line option sets it (see :func:`allow_loopback_in_tests`).
    """

    allow_loopback: bool = field(default_factory=_loopback_default)

    def check_url(self, url: str) -> httpx.URL:
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise FetchRefused(url, f"not a valid URL ({exc})") from exc
        if parsed.scheme not in ("http", "https"):
            raise FetchRefused(url, f"scheme {parsed.scheme or '(none)'!r} is not http or https")
        if not parsed.host:
            raise FetchRefused(url, "it has no host")
        return parsed

    def check_address(self, url: str, address: IPAddress) -> None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_loopback:
            if self.allow_loopback:
                return
            raise FetchRefused(url, f"{address} is a loopback address")
        for kind, flag in (
            ("a link-local", address.is_link_local),
            ("a multicast", address.is_multicast),
            ("an unspecified", address.is_unspecified),
            ("a reserved", address.is_reserved),
            ("a private", address.is_private),
        ):
            if flag:
                raise FetchRefused(url, f"{address} is {kind} address")
        if not address.is_global:
            raise FetchRefused(url, f"{address} is not a public address")

    async def resolve(self, url: httpx.URL) -> IPAddress:
        """Every address the host resolves to must pass; the first is the one to connect to."""
        host = url.host
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            self.check_address(str(url), literal)
            return literal
        port = url.port or (443 if url.scheme == "https" else 80)
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise FetchRefused(str(url), f"host {host!r} does not resolve ({exc.strerror})") from exc
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        if not addresses:
            raise FetchRefused(str(url), f"host {host!r} has no address")
        for address in addresses:
            self.check_address(str(url), address)
        return addresses[0]


@dataclass(frozen=True)
class OfflineGuard(FetchGuard):
    """Refuses every fetch: a replayed run must not touch the network, whatever asks it to."""

    def check_url(self, url: str) -> httpx.URL:
        raise FetchRefused(url, "the run replays recorded evidence and makes no network requests")
