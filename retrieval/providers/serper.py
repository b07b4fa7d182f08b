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
        return await self._search({"q": query, "num": limit}, limit)

    async def search_before(self, query: str, limit: int, before: date) -> list[SearchHit]:
        """Pages published up to ``before``: Google's custom date range, which Serper passes on as ``tbs``."""
        return await self._search({"q": query, "num": limit, "tbs": date_range(before)}, limit)

    async def _search(self, payload: dict[str, object], limit: int) -> list[SearchHit]:
        key = require_key(KEY_VARIABLE, "Serper")
        answer = await self.fetcher.post_json(self.endpoint, payload, headers={"X-API-KEY": key})
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


def date_range(before: date) -> str:
    """Google's ``tbs`` value for pages up to ``before`` (month/day/year, as Google writes it)."""
    return f"cdr:1,cd_max:{before.month}/{before.day}/{before.year}"


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
