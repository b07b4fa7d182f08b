"""The SSRF matrix: every non-public target is refused, directly and at a redirect hop.

No request leaves loopback: names resolve through a fake resolver (hostile DNS answers included),
literal addresses are refused before any connection, public controls are checked as decisions
only, and a guard on the HTTP transport fails the test if anything tries to connect elsewhere.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Iterator
from urllib.parse import quote

import httpx
import pytest

from retrieval.fetch import Fetcher, FetchLimits
from retrieval.guards import FetchGuard, FetchRefused
from tests.support.page_server import PageServer

DNS: dict[str, list[str]] = {
    "localhost": ["127.0.0.1"],
    "evil-loopback.test": ["127.0.0.1"],
    "evil-private.test": ["10.1.2.3"],
    "evil-mixed.test": ["93.184.216.34", "10.0.0.5"],
    "evil-v6-loopback.test": ["::1"],
    "evil-mapped.test": ["::ffff:127.0.0.1"],
    "evil-metadata.test": ["169.254.169.254"],
    "evil-6to4.test": ["2002:a9fe:a9fe::"],
    "evil-nat64.test": ["64:ff9b::a00:1"],
    "evil-cgnat.test": ["100.64.0.9"],
    "evil-ula.test": ["fd12:3456::1"],
    "public.test": ["93.184.216.34"],
    "public-v6.test": ["2606:4700:4700::1111"],
}


async def fake_resolver(host: str, port: int) -> list[str]:
    if host.rstrip(".").lower() not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return DNS[host.rstrip(".").lower()]


DIRECT = [
    # loopback, in every spelling
    "http://127.0.0.1/", "http://127.8.9.10/", "http://localhost/", "http://LOCALHOST/", "http://localhost./",
    "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]/", "http://2130706433/", "http://0x7f000001/", "http://017700000001/",
    "http://127.1/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://example.com@127.0.0.1/", "http://user:pw@localhost/",
    "http://[::ffff:0:7f00:1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/",
    # unspecified
    "http://0.0.0.0/", "http://0/", "http://[::]/",
    # private and special-purpose IPv4
    "http://10.0.0.1/", "http://172.16.0.1/", "http://172.31.255.254/", "http://192.168.1.1/", "http://169.254.169.254/",
    "http://100.64.0.1/", "http://100.100.100.200/", "http://198.18.0.1/", "http://240.0.0.1/", "http://255.255.255.255/",
    "http://224.0.0.1/", "http://192.0.0.192/", "http://192.0.0.8/", "http://192.0.2.1/", "http://198.51.100.7/",
    "http://203.0.113.9/", "http://192.88.99.1/",
    # special IPv6, and IPv6 forms that embed IPv4
    "http://[fd00:ec2::254]/", "http://[fc00::1]/", "http://[fe80::1]/", "http://[fe80::1%25lo]/", "http://[ff02::1]/",
    "http://[100::1]/", "http://[2001:db8::1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b:1::a00:1]/",
    "http://[::ffff:10.0.0.1]/", "http://[::ffff:169.254.169.254]/", "http://[::ffff:8.8.8.8]/",
    "http://[2002:a9fe:a9fe::]/", "http://[2002:c0a8:101::]/", "http://[2002:a00:1::]/",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "http://[2001:0:a00:1::]/",
    # schemes and shapes
    "file:///etc/passwd", "FILE:///etc/passwd", "gopher://example.org/", "ftp://example.org/file", "dict://example.org:11111/",
    "data:text/plain,hello", "javascript:alert(1)", "//127.0.0.1/", "http:///nohost",
    # hostile DNS: every answer must pass
    "http://evil-loopback.test/", "http://evil-private.test/", "http://evil-mixed.test/", "http://evil-v6-loopback.test/",
    "http://evil-mapped.test/", "http://evil-metadata.test/", "http://evil-6to4.test/", "http://evil-nat64.test/",
    "http://evil-cgnat.test/", "http://evil-ula.test/", "http://does-not-resolve.test/",
]

PUBLIC = [
    ("http://93.184.216.34/", "93.184.216.34"),
    ("https://1.1.1.1/", "1.1.1.1"),
    ("http://223.255.255.254/", "223.255.255.254"),
    ("http://[2606:4700:4700::1111]/", "2606:4700:4700::1111"),
    ("http://[2002:808:808::]/", "2002:808:808::"),
    ("http://public.test/", "93.184.216.34"),
    ("http://public-v6.test/", "2606:4700:4700::1111"),
]

REDIRECTS = [
    ("http://169.254.169.254/latest/meta-data/", 302), ("http://10.0.0.1/", 302), ("http://192.168.0.1/", 302),
    ("http://172.16.5.5/", 302), ("http://100.64.0.1/", 302), ("http://[fc00::1]/", 302), ("http://[::ffff:10.0.0.1]/", 302),
    ("file:///etc/passwd", 302), ("gopher://example.org/", 302), ("//169.254.169.254/", 302), ("http://x@10.0.0.1/", 302),
    ("http://evil-private.test/", 302), ("http://167772161/", 302), ("http://192.0.0.192/", 302), ("http://[2002:7f00:1::]/", 302),
    ("http://[64:ff9b::a9fe:a9fe]/", 302), ("http://evil-metadata.test/", 303), ("http://169.254.169.254/", 307),
    ("http://10.0.0.1/", 308), ("http://[::ffff:127.0.0.1]/", 301),
]


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly if anything tries to connect beyond loopback."""
    original = httpx.AsyncHTTPTransport.handle_async_request

    async def guarded(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
        assert ipaddress.ip_address(request.url.host).is_loopback, f"tried to connect to {request.url.host}"
        return await original(self, request)

    monkeypatch.setattr(httpx.AsyncHTTPTransport, "handle_async_request", guarded)


@pytest.fixture
def server() -> Iterator[PageServer]:
    with PageServer() as running:
        yield running


@pytest.mark.parametrize("url", DIRECT)
async def test_every_non_public_target_is_refused(url: str) -> None:
    fetcher = Fetcher(FetchLimits(timeout_s=3), FetchGuard(resolver=fake_resolver))
    with pytest.raises(FetchRefused):
        await fetcher.get_page(url)
    await fetcher.close()


@pytest.mark.parametrize("url, expected", PUBLIC)
async def test_public_targets_are_allowed_as_decisions(url: str, expected: str) -> None:
    address = await FetchGuard(resolver=fake_resolver).resolve(httpx.URL(url))
    assert address == ipaddress.ip_address(expected)


@pytest.mark.parametrize("target, status", REDIRECTS)
async def test_every_non_public_redirect_is_refused_at_the_hop(server: PageServer, target: str, status: int) -> None:
    fetcher = Fetcher(FetchLimits(timeout_s=3), FetchGuard(allow_loopback=True, resolver=fake_resolver))
    with pytest.raises(FetchRefused):
        await fetcher.get_page(f"{server.base}/redirect?status={status}&to={quote(target, safe='')}")
    assert [r["path"] for r in server.requests] == ["/redirect"]
    await fetcher.close()


def test_the_matrix_is_large_enough() -> None:
    assert len(DIRECT) + len(REDIRECTS) >= 40
    assert len(set(DIRECT)) == len(DIRECT)
