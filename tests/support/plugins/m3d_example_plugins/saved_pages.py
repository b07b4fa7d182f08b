"""A web search provider registered from outside m3d-agents: pages saved on disk, matched by their words.

It follows the recipe of ``docs/extending.md`` ("A search provider"): a class with the ``WebSearch``
methods, and a builder registered with ``@search_provider`` that the distribution names under the
``m3d_agents.search_providers`` entry-point group.
"""

from __future__ import annotations

import re
from pathlib import Path

from retrieval.providers.base import SearchHit, WebSearch
from retrieval.providers.registry import ProviderSetup, search_provider

PAGES = Path(__file__).parent / "pages"
PUBLIC = "https://saved-pages.example"
_WORD = re.compile(r"[a-z]{4,}")


class SavedPages:
    """Answers a query with the saved pages that share a word with it, their HTML as the page's snapshot."""

    name = "saved_pages"

    def __init__(self, folder: Path, site: str) -> None:
        self.folder = folder
        self.site = site

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        asked = set(_WORD.findall(query.lower()))
        hits: list[SearchHit] = []
        for page in sorted(self.folder.glob("*.html")):
            text = page.read_text(encoding="utf-8")
            if asked & set(_WORD.findall(text.lower())):
                title = re.search(r"<title>(.*?)</title>", text)
                hits.append(SearchHit(url=f"{self.site}/{page.stem}", title=title.group(1) if title else None,
                                      provider=self.name, rank=len(hits), snapshot=page))
        return hits[:limit]


@search_provider("saved_pages", "web")
def build(setup: ProviderSetup) -> WebSearch:
    """Pages saved on disk, matched by the words of the query (an example of a plug-in provider)."""
    return SavedPages(PAGES, setup.endpoint(PUBLIC))
