"""Reverse image search with Google Lens through SerpAPI.

SerpAPI's Lens engine takes an image URL, not image bytes, so it only works for images that are
reachable on the public web; :class:`~retrieval.config.RetrievalConfig` has ``public_image_url``
for users who host their images. Without a URL the provider says so instead of answering.
"""

from __future__ import annotations

from m3d_agents.errors import BackendError, InputError
from retrieval.fetch import Fetcher
from retrieval.providers.base import ImageQuery, ReverseImageResult, SearchHit, require_key

ENDPOINT = "https://serpapi.com/search.json"
KEY_VARIABLE = "SERPAPI_API_KEY"


class SerpApiGoogleLens:
    name = "serpapi_lens"

    def __init__(self, fetcher: Fetcher, endpoint: str = ENDPOINT) -> None:
        self.fetcher = fetcher
        self.endpoint = endpoint

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        key = require_key(KEY_VARIABLE, "SerpAPI Google Lens")
        if not query.public_url:
            raise InputError(
                "retrieval.public_image_url",
                "SerpAPI Google Lens needs a public URL of the image; set public_image_url or use google_vision",
            )
        answer = await self.fetcher.get_json(
            self.endpoint, params={"engine": "google_lens", "url": query.public_url, "api_key": key}
        )
        return parse_lens(answer)


def parse_lens(answer: object) -> ReverseImageResult:
    if not isinstance(answer, dict):
        raise BackendError("SerpAPI answered with something other than a JSON object")
    if answer.get("error"):
        raise BackendError(f"SerpAPI refused the request: {answer['error']}")
    pages: list[SearchHit] = []
    for field, match in (("exact_matches", "full"), ("visual_matches", "similar")):
        for item in answer.get(field, []) or []:
            url = item.get("link")
            if url and all(hit.url != url for hit in pages):
                pages.append(
                    SearchHit(
                        url=url, title=item.get("title"), snippet=item.get("source"), provider="serpapi_lens",
                        rank=len(pages), match=match, image_url=item.get("image") or item.get("thumbnail"),
                    )
                )
    graph = answer.get("knowledge_graph") or []
    entities = [g["title"] for g in graph if isinstance(g, dict) and g.get("title")]
    return ReverseImageResult(provider="serpapi_lens", pages=pages, entities=entities)
