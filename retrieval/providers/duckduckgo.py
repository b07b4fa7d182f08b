"""Web search through DuckDuckGo and its partners, with the ``ddgs`` library; no key needed.

``ddgs`` talks to the search engines itself, to their fixed public hosts; the pages it returns are
then fetched through this project's guarded fetcher like any other. It reads the engines' result
pages with lxml, so a search runs in a worker of the parser pool (:mod:`m3d_agents.isolation`),
like every other parse of outside HTML.
"""

from __future__ import annotations

import asyncio

from m3d_agents.errors import BackendError
from m3d_agents.isolation import Item, parse
from retrieval.providers.base import SearchHit


class DuckDuckGoSearch:
    name = "duckduckgo"

    def __init__(self, region: str = "us-en", timeout_s: int = 10) -> None:
        self.region = region
        self.timeout_s = timeout_s

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        return await asyncio.to_thread(self._search, query, limit)

    def _search(self, query: str, limit: int) -> list[SearchHit]:
        item = Item("search", f"DuckDuckGo {query[:60]!r}", "the search's result reader")
        return parse(item, search_here, query, limit, self.region, self.timeout_s)


def search_here(query: str, limit: int, region: str, timeout_s: int) -> list[SearchHit]:
    """What :meth:`DuckDuckGoSearch.search` asks a parser worker."""
    from ddgs import DDGS
    from ddgs.exceptions import DDGSException

    try:
        results = DDGS(timeout=timeout_s).text(query, region=region, max_results=limit, backend="duckduckgo") or []
    except DDGSException as exc:
        raise BackendError(f"DuckDuckGo search failed: {exc}") from exc
    return [
        SearchHit(url=r["href"], title=r.get("title"), snippet=r.get("body"), provider="duckduckgo", rank=rank)
        for rank, r in enumerate(results)
        if r.get("href")
    ]
