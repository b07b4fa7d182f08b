"""Web search through Serper (Google results as JSON)."""

from __future__ import annotations

from datetime import date

from m3d_agents.errors import BackendError
from retrieval.fetch import Fetcher
from retrieval.providers.base import SearchHit, require_key

ENDPOINT = "https://google.serper.dev/search"
KEY_VARIABLE = "SERPER_API_KEY"


class SerperSearch:
    name = "serper"

    def __init__(self, fetcher: Fetcher, endpoint: str = ENDPOINT) -> None:
        self.fetcher = fetcher
        self.endpoint = endpoint

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        key = require_key(KEY_VARIABLE, "Serper")
        answer = await self.fetcher.post_json(self.endpoint, {"q": query, "num": limit}, headers={"X-API-KEY": key})
        if not isinstance(answer, dict) or "organic" not in answer:
            message = answer.get("message") if isinstance(answer, dict) else None
            raise BackendError(f"Serper answered without results: {message or str(answer)[:200]}")
        hits = []
        for rank, item in enumerate(answer["organic"][:limit]):
            if item.get("link"):
                hits.append(
                    SearchHit(
                        url=item["link"], title=item.get("title"), snippet=item.get("snippet"), provider="serper",
                        rank=rank, published=absolute_date(item.get("date")),
                    )
                )
        return hits


def absolute_date(text: str | None) -> date | None:
    """"Mar 3, 2021" -> 2021-03-03; relative dates ("3 days ago") depend on when they were read: None."""
    if not text or not any(ch.isdigit() for ch in text) or "ago" in text.lower():
        return None
    from dateutil import parser

    try:
        parsed = parser.parse(text)
    except (ValueError, OverflowError, TypeError):
        return None
    return parsed.date() if parsed.year > 1900 else None
