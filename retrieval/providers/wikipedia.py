"""Wikipedia search through the MediaWiki API: one call returns the top articles with their lead sections."""

from __future__ import annotations

from m3d_agents.errors import BackendError
from retrieval.fetch import Fetcher
from retrieval.providers.base import SearchHit


class WikipediaSearch:
    name = "wikipedia"

    def __init__(self, fetcher: Fetcher, language: str = "en", endpoint: str | None = None) -> None:
        self.fetcher = fetcher
        self.endpoint = endpoint or f"https://{language}.wikipedia.org/w/api.php"

    async def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        params = {
            "action": "query",
            "format": "json",
            "formatversion": "2",
            "generator": "search",
            "gsrsearch": query,
            "gsrlimit": str(limit),
            "prop": "extracts|info",
            "exintro": "1",
            "explaintext": "1",
            "exlimit": "max",
            "inprop": "url",
        }
        answer = await self.fetcher.get_json(self.endpoint, params=params)
        if not isinstance(answer, dict):
            raise BackendError("the MediaWiki API answered with something other than a JSON object")
        if "error" in answer:
            raise BackendError(f"the MediaWiki API refused the query: {answer['error'].get('info', answer['error'])}")
        pages = (answer.get("query") or {}).get("pages") or []
        pages = sorted(pages, key=lambda p: p.get("index", 0))
        return [
            SearchHit(
                url=p.get("fullurl") or f"{self.endpoint.split('/w/')[0]}/wiki/{p['title'].replace(' ', '_')}",
                title=p["title"],
                snippet=(p.get("extract") or "").strip() or None,
                provider="wikipedia",
                rank=rank,
                match="page",
            )
            for rank, p in enumerate(pages)
            if p.get("title")
        ]
