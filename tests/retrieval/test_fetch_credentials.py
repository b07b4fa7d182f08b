"""Keys given to the fetcher go to their own origin only, and never into an error's text."""

from __future__ import annotations

from typing import Iterator
from urllib.parse import quote

import pytest

from retrieval.fetch import FetchError, Fetcher, FetchLimits
from retrieval.guards import FetchGuard, FetchRefused
from tests.support.page_server import PageServer

KEY_HEADERS = {"X-API-KEY": "serper-SECRET-111", "X-Goog-Api-Key": "vision-SECRET-222", "Authorization": "Bearer tok-SECRET-333"}


async def loopback_names(host: str, port: int) -> list[str]:
    return {"localhost": ["127.0.0.1"], "private.test": ["10.0.0.7"]}[host]


def fetcher() -> Fetcher:
    return Fetcher(FetchLimits(timeout_s=3), FetchGuard(allow_loopback=True, resolver=loopback_names))


@pytest.fixture
def servers() -> Iterator[tuple[PageServer, PageServer]]:
    with PageServer() as first, PageServer() as second:
        first.api_answers["x"] = second.api_answers["x"] = {"ok": True}
        yield first, second


def sent_keys(server: PageServer) -> list[str]:
    return [name for request in server.requests for name in request["headers"] if name.lower() in {k.lower() for k in KEY_HEADERS}]


@pytest.mark.parametrize("method, status", [("GET", 302), ("GET", 307), ("POST", 307), ("POST", 308)])
async def test_key_headers_are_dropped_when_a_redirect_leaves_the_origin(
    servers: tuple[PageServer, PageServer], method: str, status: int
) -> None:
    first, second = servers
    target = f"http://localhost:{second.httpd.server_address[1]}/api/x"
    url = f"{first.base}/redirect?status={status}&to={quote(target, safe='')}"
    client = fetcher()
    if method == "GET":
        answer = await client.get_json(url, headers=KEY_HEADERS)
    else:
        answer = await client.post_json(url, {"q": "storm"}, headers=KEY_HEADERS)
    await client.close()
    assert answer == {"ok": True}
    assert sorted(sent_keys(first)) == sorted(KEY_HEADERS)
    assert second.requests and sent_keys(second) == []


async def test_key_headers_follow_a_redirect_within_the_origin(servers: tuple[PageServer, PageServer]) -> None:
    first, _ = servers
    client = fetcher()
    await client.get_json(f"{first.base}/redirect?status=307&to=/api/x", headers=KEY_HEADERS)
    await client.close()
    assert len(first.requests) == 2
    assert sorted(sent_keys(first)) == sorted([*KEY_HEADERS, *KEY_HEADERS])


async def test_a_key_in_the_query_never_reaches_an_error_message() -> None:
    client = fetcher()
    with pytest.raises(FetchRefused) as refused:
        await client.get_json("http://private.test/search.json", params={"q": "storm", "api_key": "serp-SECRET-444"})
    assert "serp-SECRET-444" not in str(refused.value) and "serp-SECRET-444" not in refused.value.url
    with pytest.raises(FetchError) as failed:
        await client.get_json("http://127.0.0.1:9/search.json", params={"q": "storm", "api_key": "serp-SECRET-444"})
    assert "serp-SECRET-444" not in str(failed.value)
    await client.close()
