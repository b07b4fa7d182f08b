"""Reverse image search with Google Lens through SerpAPI.

SerpAPI's image engines take an image by URL only: Google Lens (``engine=google_lens``) requires
``url`` and Google Reverse Image (``engine=google_reverse_image``) requires ``image_url``; neither
documents an upload of image bytes. So this provider works only for images reachable on the
public web, through :class:`~retrieval.config.RetrievalConfig`'s ``public_image_url`` template
for users who host their posts' images themselves. The product never puts a post's image on a
public host on its own (that would hand a user's image to a third party without the
configuration saying so), so without the template the provider is not built and every
sample's evidence report says why (:data:`NEEDS_PUBLIC_URL`).
"""

from __future__ import annotations

from m3d_agents.errors import BackendError, InputError
from retrieval.fetch import Fetcher
from retrieval.providers.base import ImageQuery, ReverseImageResult, SearchHit, require_key

ENDPOINT = "https://serpapi.com/search.json"
KEY_VARIABLE = "SERPAPI_API_KEY"
NEEDS_PUBLIC_URL = ("SerpAPI's Google Lens takes a public image URL only (no upload), and images are never put on a "
                    "public host unasked: set retrieval.public_image_url to where you host the posts' images, "
                    "or set GOOGLE_VISION_API_KEY")


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
