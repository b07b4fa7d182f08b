"""Guards on every outbound fetch: which URLs and which addresses a page may come from.

Evidence URLs come from search results, i.e. from strangers. Without these checks a result (or a
redirect it triggers) could make the product read ``file://`` paths, cloud metadata endpoints
(169.254.169.254) or services on the private network. Addresses are checked after DNS resolution
and again at every redirect hop, and the connection is then pinned to the checked address so a
second DNS answer cannot swap it.

The check is an allow-list of public unicast space, written out here from IANA's special-purpose
registries, not Python's ``ipaddress`` flags: their tables differ between patch releases (3.11.7
calls 192.0.0.192, an old cloud metadata address, global), and they know nothing of addresses
that *embed* another (6to4, Teredo, NAT64, IPv4-mapped), through which a public-looking IPv6
address reaches a private IPv4 one. IPv4: everything from 1.0.0.0 to 223.255.255.255 except the
special-purpose blocks below. IPv6: only global unicast (2000::/3), except its special-purpose
blocks; a 6to4 address passes only when the IPv4 address it embeds does; Teredo is refused
(its client address is obfuscated, and relays reach whatever it names); IPv4-mapped, NAT64 and
every other form outside 2000::/3 are refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Awaitable, Callable

import httpx

from m3d_agents.errors import InputError
from m3d_agents.redaction import redact_url

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port) -> addresses as text``; the default asks the system (``getaddrinfo``)."""

_V4_SPECIAL: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "an unspecified ('this network') address"),
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "an IETF protocol assignment (not public)"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.88.99.0/24", "a 6to4 relay anycast address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
)
_V6_SPECIAL: tuple[tuple[str, str], ...] = (
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("::ffff:0:0/96", "an IPv4-mapped address"),
    ("::ffff:0:0:0/96", "an IPv4-translated address"),
    ("::/96", "an IPv4-compatible address (deprecated)"),
    ("64:ff9b::/96", "a NAT64 address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("2001::/32", "a Teredo address"),
    ("2001::/23", "an IETF protocol assignment (not public)"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
    ("5f00::/16", "a segment-routing address"),
    ("fc00::/7", "a private (unique local) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address (deprecated)"),
    ("ff00::/8", "a multicast address"),
)
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
LOOPBACK = (ipaddress.IPv4Network("127.0.0.0/8"), ipaddress.IPv6Network("::1/128"))


def _allowed(universe: str, special: tuple[tuple[str, str], ...]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """``universe`` with every special-purpose block carved out: the allow-list itself."""
    allowed = [ipaddress.ip_network(universe)]
    for block, _ in special:
        network = ipaddress.ip_network(block)
        carved: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for piece in allowed:
            if network.version == piece.version and piece.overlaps(network):
                if network.subnet_of(piece):  # type: ignore[arg-type]
                    carved.extend(piece.address_exclude(network))  # type: ignore[arg-type]
            else:
                carved.append(piece)
        allowed = carved
    return sorted(allowed, key=lambda n: (n.version, n.network_address))


PUBLIC_V4 = _allowed("0.0.0.0/0", _V4_SPECIAL)
PUBLIC_V6 = _allowed("2000::/3", tuple(item for item in _V6_SPECIAL if item[0] != "2001::/32"))
_NAMED = [(ipaddress.ip_network(block), why) for block, why in (*_V4_SPECIAL, *_V6_SPECIAL)]
_NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is not public unicast space, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(address.packed)  # without a %zone
        if address in SIX_TO_FOUR:
            embedded = address.sixtofour
            assert embedded is not None
            inner = refusal(embedded)
            return f"a 6to4 address embedding {embedded}, {inner}" if inner else None
        mapped = address.ipv4_mapped
        public = PUBLIC_V6
    else:
        mapped = None
        public = PUBLIC_V4
    if any(address in network for network in public):
        return None
    why = next((why for network, why in _NAMED if address in network), None)
    if why is None:
        why = "outside public unicast space (2000::/3)" if address.version == 6 else "not a public address"
    if mapped is not None:
        inner = refusal(mapped)
        why += f" of {mapped}" + (f", {inner}" if inner else "")
    return why


def numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """A host written as a number (``2130706433``, ``0x7f.1``, ``017700000001``, ``127.1``) is an address,
    whatever a resolver would make of it: read it the way the C library does, without asking one."""
    if not _NUMERIC_HOST.fullmatch(host) or not any(c.isdigit() for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


class FetchRefused(InputError):
    """A URL or the address it resolves to is not allowed."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = redact_url(url)
        super().__init__("url", f"refused {self.url!r}: {problem}")


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


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
    config file or command-line option sets it (see :func:`allow_loopback_in_tests`). ``resolver``
    replaces the system's DNS (tests give hostile answers through it without any network).
    """

    allow_loopback: bool = field(default_factory=_loopback_default)
    resolver: Resolver | None = None

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
        if self.allow_loopback and any(address.version == n.version and address in n for n in LOOPBACK):
            return
        why = refusal(address)
        if why is not None:
            raise FetchRefused(url, f"{address} is {why}")

    def literal_address(self, host: str) -> IPAddress | None:
        try:
            return ipaddress.ip_address(host)
        except ValueError:
            return numeric_ipv4(host)

    async def resolve(self, url: httpx.URL) -> IPAddress:
        """Every address the host resolves to must pass; the first is the one to connect to."""
        host = url.host
        literal = self.literal_address(host)
        if literal is not None:
            self.check_address(str(url), literal)
            return literal
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            answers = await (self.resolver or system_resolver)(host, port)
        except (socket.gaierror, OSError) as exc:
            raise FetchRefused(str(url), f"host {host!r} does not resolve ({getattr(exc, 'strerror', None) or exc})") from exc
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                addresses.append(ipaddress.ip_address(answer.split("%")[0]))
            except ValueError:
                raise FetchRefused(str(url), f"host {host!r} resolved to {answer!r}, which is not an address") from None
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
