"""Guards on outbound fetches, against a loopback server: schemes, private addresses, redirects, limits."""

from __future__ import annotations

import pytest

from retrieval.fetch import FetchError, Fetcher, FetchLimits
from retrieval.guards import FetchGuard, FetchRefused
from tests.support.page_server import PageServer


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with PageServer() as running:
        yield running


def loopback_fetcher(**limits: float) -> Fetcher:
    return Fetcher(FetchLimits(**limits), FetchGuard(allow_loopback=True))  # type: ignore[arg-type]


async def test_file_scheme_is_refused() -> None:
    with pytest.raises(FetchRefused, match="scheme 'file'"):
        await Fetcher().get_page("file:///etc/passwd")


async def test_loopback_is_refused_unless_a_test_allows_it(server: PageServer) -> None:
    fetcher = Fetcher()
    with pytest.raises(FetchRefused, match="127.0.0.1 is a loopback address"):
        await fetcher.get_page(f"{server.base}/page/x")
    with pytest.raises(FetchRefused, match="loopback"):
        await fetcher.get_page(f"http://localhost:{server.httpd.server_address[1]}/page/x")
    server.pages["x"] = "<html><body><p>hello</p></body></html>"
    page = await loopback_fetcher().get_page(f"{server.base}/page/x")
    assert "hello" in page.text and page.status == 200
    assert len(server.requests) == 1
    await fetcher.close()


@pytest.mark.parametrize(
    "url, problem",
    [
        ("http://10.1.2.3/", "private"),
        ("http://192.168.0.10/", "private"),
        ("http://[::1]:8080/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://224.0.0.1/", "multicast"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://[::ffff:10.0.0.1]/", "private"),
        ("ftp://example.org/file", "scheme"),
        ("http:///nohost", "no host"),
    ],
)
async def test_non_public_addresses_are_refused_before_connecting(url: str, problem: str) -> None:
    with pytest.raises(FetchRefused, match=problem):
        await Fetcher().get_page(url)


async def test_redirect_to_metadata_endpoint_is_refused_at_the_hop(server: PageServer) -> None:
    with pytest.raises(FetchRefused, match="169.254.169.254"):
        await loopback_fetcher().get_page(f"{server.base}/redirect?to=http://169.254.169.254/latest/meta-data/")
    assert [r["path"] for r in server.requests] == ["/redirect"]


async def test_redirects_are_followed_and_capped(server: PageServer) -> None:
    server.pages["target"] = "<html><body><p>arrived</p></body></html>"
    page = await loopback_fetcher().get_page(f"{server.base}/redirect?to=/page/target")
    assert page.final_url.endswith("/page/target") and "arrived" in page.text
    with pytest.raises(FetchError, match="more than 0 redirects"):
        await loopback_fetcher(max_redirects=0).get_page(f"{server.base}/redirect?to=/page/target")


async def test_oversized_bodies_are_cut_off(server: PageServer) -> None:
    with pytest.raises(FetchError, match="over the limit of 100000 bytes"):
        await loopback_fetcher(max_bytes=100_000).get_page(f"{server.base}/big")
    with pytest.raises(FetchError, match="over the limit of 100000 bytes"):
        await loopback_fetcher(max_bytes=100_000).get_page(f"{server.base}/big-unannounced")


async def test_a_slow_body_hits_the_deadline(server: PageServer) -> None:
    with pytest.raises(FetchError, match="no complete answer within 1.0s"):
        await loopback_fetcher(timeout_s=1.0).get_page(f"{server.base}/slow")


async def test_content_type_is_checked(server: PageServer) -> None:
    with pytest.raises(FetchError, match="content type 'image/png'"):
        await loopback_fetcher().get_page(f"{server.base}/image")


async def test_missing_pages_are_errors(server: PageServer) -> None:
    with pytest.raises(FetchError, match="HTTP 404"):
        await loopback_fetcher().get_page(f"{server.base}/nothing-here")


def test_secret_query_parameters_are_redacted_in_errors() -> None:
    error = FetchError("https://serpapi.com/search.json?engine=google_lens&api_key=SECRET123", "HTTP 401")
    assert "SECRET123" not in str(error) and "api_key=***" in str(error)
