"""Reverse image search with Google Cloud Vision web detection (the provider LLM-Consensus used).

One ``images:annotate`` call with the ``WEB_DETECTION`` feature returns pages that show the image
(fully or partially matching), web entities, and a best-guess label. The key goes in a header, not
the URL, so it never appears in logs or error messages.
"""

from __future__ import annotations

import base64
import re

from m3d_agents.errors import BackendError
from retrieval.fetch import Fetcher
from retrieval.providers.base import ImageQuery, ReverseImageResult, SearchHit, require_key

ENDPOINT = "https://vision.googleapis.com/v1/images:annotate"
KEY_VARIABLE = "GOOGLE_VISION_API_KEY"
MAX_INLINE_BYTES = 8 * 1024 * 1024
_TAG = re.compile(r"<[^>]+>")


class GoogleVisionWebDetection:
    name = "google_vision"

    def __init__(self, fetcher: Fetcher, endpoint: str = ENDPOINT, max_results: int = 20) -> None:
        self.fetcher = fetcher
        self.endpoint = endpoint
        self.max_results = max_results

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        key = require_key(KEY_VARIABLE, "Google Cloud Vision")
        image = query.image
        data = image.source.read_bytes() if image.source.stat().st_size <= MAX_INLINE_BYTES else image.png_bytes()
        payload = {
            "requests": [
                {
                    "image": {"content": base64.b64encode(data).decode("ascii")},
                    "features": [{"type": "WEB_DETECTION", "maxResults": self.max_results}],
                }
            ]
        }
        answer = await self.fetcher.post_json(self.endpoint, payload, headers={"X-Goog-Api-Key": key})
        return parse_web_detection(answer)


def parse_web_detection(answer: object) -> ReverseImageResult:
    if not isinstance(answer, dict) or not isinstance(answer.get("responses"), list) or not answer["responses"]:
        raise BackendError("Google Cloud Vision answered without a 'responses' list")
    first = answer["responses"][0]
    if "error" in first:
        error = first["error"]
        raise BackendError(f"Google Cloud Vision refused the request: {error.get('message', error)}")
    web = first.get("webDetection", {}) or {}
    pages: list[SearchHit] = []
    for rank, page in enumerate(web.get("pagesWithMatchingImages", []) or []):
        url = page.get("url")
        if not url:
            continue
        full = page.get("fullMatchingImages") or []
        partial = page.get("partialMatchingImages") or []
        image_url = (full or partial or [{}])[0].get("url")
        title = _TAG.sub("", page.get("pageTitle", "") or "").strip() or None
        pages.append(
            SearchHit(
                url=url, title=title, provider="google_vision", rank=rank,
                match="full" if full else "partial", image_url=image_url,
            )
        )
    pages.sort(key=lambda hit: (hit.match != "full", hit.rank))
    return ReverseImageResult(
        provider="google_vision",
        pages=pages,
        best_guess=[g["label"] for g in web.get("bestGuessLabels", []) or [] if g.get("label")],
        entities=[e["description"] for e in web.get("webEntities", []) or [] if e.get("description")],
    )
