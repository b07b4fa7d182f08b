"""A loopback stand-in for the search providers, speaking their real response formats.

It answers Google Cloud Vision web detection (``POST /vision/v1/images:annotate``), SerpAPI Google
Lens (``GET /serpapi/search.json``), Serper (``POST /serper/search``) and the MediaWiki search API
(``GET /wikipedia/w/api.php``), and serves the pages those answers point to from saved copies
(:class:`~tests.support.page_server.PageServer`'s ``/bench/`` and ``/mr2/`` routes), so the live
retrieval path runs end to end without the internet.

What it answers:

- an image of the MR2 sample: the pages MR2 recorded for it (its ``inverse_annotation.json``),
  with the links rewritten to the saved HTML on this server;
- any other image: English pages of the article-extraction benchmark, chosen by the image's hash;
- a text search (Serper, Wikipedia): benchmark pages or CLIMATE-FEVER's Wikipedia sentences that
  share the most words with the query.

Every API route checks its key like the real service does, and ``refuse`` makes a provider answer
with its own error format, so failures can be tested too. Requests are counted per route.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from collections import Counter
from functools import cached_property
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.page_server import BENCH, MR2_MERGE, PageServer
from tests.support.paths import SHARED_DATA

KEY = "loopback-test-key"
"""The API key every route accepts; anything else is refused as the real service would."""
PROVIDER_KEYS = {
    "GOOGLE_VISION_API_KEY": KEY,
    "SERPAPI_API_KEY": KEY,
    "SERPER_API_KEY": KEY,
}
MR2_ROOT = SHARED_DATA / "mr2-sample"
_WORD = re.compile(r"[a-z0-9]{3,}")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
PAGES_PER_IMAGE = 5


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class ProviderServer(PageServer):
    """:class:`PageServer` plus the provider APIs; see the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: set[str] = set()
        self.calls: Counter[str] = Counter()

    # --- what the environment needs to point the providers here ---------------------------------

    def endpoints(self) -> dict[str, str]:
        """Environment variables that point each provider at this server."""
        return {
            "M3D_GOOGLE_VISION_ENDPOINT": f"{self.base}/vision/v1/images:annotate",
            "M3D_SERPAPI_ENDPOINT": f"{self.base}/serpapi/search.json",
            "M3D_SERPER_ENDPOINT": f"{self.base}/serper/search",
            "M3D_WIKIPEDIA_ENDPOINT": f"{self.base}/wikipedia/w/api.php",
        }

    def environment(self) -> dict[str, str]:
        return {**self.endpoints(), **PROVIDER_KEYS}

    # --- saved material ------------------------------------------------------------------------

    @cached_property
    def bench_pages(self) -> list[tuple[str, str, str]]:
        """(id, title, body) of the English benchmark pages, in id order."""
        from m3d_agents.language import detect_language

        truth = json.loads((BENCH / "ground-truth.json").read_text(encoding="utf-8"))
        pages = []
        for page_id in sorted(truth):
            body = str(truth[page_id].get("articleBody") or "")
            if len(body) < 400 or detect_language(body) != "en":
                continue
            html = gzip.decompress((BENCH / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
            found = _TITLE.search(html)
            title = re.sub(r"\s+", " ", found.group(1)).strip() if found else page_id[:12]
            pages.append((page_id, title, body))
        return pages

    @cached_property
    def mr2_by_image(self) -> dict[str, dict[str, Any]]:
        """sha256 of an MR2 image -> its item (with ``inv_path``)."""
        items = json.loads((MR2_ROOT / "dataset_items_test.json").read_text(encoding="utf-8"))
        table = {}
        for item in items.values():
            path = MR2_MERGE / item["image_path"]
            if path.is_file():
                table[hashlib.sha256(path.read_bytes()).hexdigest()] = item
        return table

    @cached_property
    def wikipedia_sentences(self) -> list[tuple[str, str]]:
        """(article title, sentence) from the committed CLIMATE-FEVER index."""
        from retrieval.climate_fever import load_climate_fever

        return [(d.title or "", d.text) for d in load_climate_fever().documents]

    # --- answers -------------------------------------------------------------------------------

    def image_pages(self, digest: str) -> tuple[list[dict[str, Any]], list[str], list[str]]:
        """Pages showing the image as (url, title, match) dicts, best guesses and entities."""
        item = self.mr2_by_image.get(digest)
        if item is not None:
            folder = MR2_MERGE / item["inv_path"]
            annotation = json.loads((folder / "inverse_annotation.json").read_text(encoding="utf-8"))
            pages = []
            for group, match in (("all_fully_matched_captions", "full"), ("fully_matched_no_text", "full"),
                                 ("all_partially_matched_captions", "partial"), ("partially_matched_no_text", "partial")):
                for entry in annotation.get(group) or []:
                    name = Path(str(entry.get("html_path") or "")).name
                    if name and (folder / name).is_file():
                        pages.append({"url": f"{self.base}/mr2/{item['inv_path']}/{name}",
                                      "title": entry.get("title") or name, "match": match})
            return pages, list(annotation.get("best_guess_lbl") or []), list(annotation.get("entities") or [])
        chosen = self.bench_pages
        start = int(digest[:8], 16) % len(chosen)
        picked = [chosen[(start + i) % len(chosen)] for i in range(PAGES_PER_IMAGE)]
        pages = [{"url": f"{self.base}/bench/{pid}", "title": title, "match": "full" if i < 2 else "partial"}
                 for i, (pid, title, _body) in enumerate(picked)]
        return pages, [picked[0][1].lower()], [picked[0][1]]

    def text_pages(self, query: str, limit: int) -> list[tuple[str, str, str]]:
        wanted = words(query)
        ranked = sorted(self.bench_pages, key=lambda p: (-len(wanted & words(p[1] + " " + p[2][:2000])), p[0]))
        return ranked[:limit]

    # --- routes --------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes | None) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query)
        route = {
            "/vision/v1/images:annotate": self._vision,
            "/serpapi/search.json": self._serpapi,
            "/serper/search": self._serper,
            "/wikipedia/w/api.php": self._wikipedia,
        }.get(parts.path)
        if route is None:
            super()._handle(handler, body)
            return
        self.requests.append({"path": parts.path, "query": query, "headers": dict(handler.headers), "body": body})
        self.calls[parts.path] += 1
        status, answer = route(handler, query, body)
        self._send(handler, status, json.dumps(answer).encode(), "application/json")

    def _vision(self, handler: BaseHTTPRequestHandler, _query: dict[str, list[str]], body: bytes | None) -> tuple[int, Any]:
        if handler.headers.get("X-Goog-Api-Key") != KEY:
            return 400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key."}}
        if "google_vision" in self.refuse:
            return 200, {"responses": [{"error": {"code": 7, "message": "This API method requires billing to be enabled."}}]}
        request = json.loads(body or b"{}")["requests"][0]
        digest = hashlib.sha256(base64.b64decode(request["image"]["content"])).hexdigest()
        pages, guesses, entities = self.image_pages(digest)
        found = [
            {"url": p["url"], "pageTitle": p["title"],
             ("fullMatchingImages" if p["match"] == "full" else "partialMatchingImages"): [{"url": f"{p['url']}.jpg"}]}
            for p in pages
        ]
        return 200, {"responses": [{"webDetection": {
            "webEntities": [{"entityId": f"/m/{i}", "score": 1.0 - i / 10, "description": e} for i, e in enumerate(entities)],
            "pagesWithMatchingImages": found,
            "bestGuessLabels": [{"label": g, "languageCode": "en"} for g in guesses],
        }}]}

    def _serpapi(self, _handler: BaseHTTPRequestHandler, query: dict[str, list[str]], _body: bytes | None) -> tuple[int, Any]:
        if query.get("api_key") != [KEY]:
            return 401, {"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}
        if "serpapi_lens" in self.refuse:
            return 200, {"error": "Your account has run out of searches."}
        digest = re.findall(r"[0-9a-f]{64}", (query.get("url") or [""])[0])
        pages, _guesses, entities = self.image_pages(digest[0] if digest else "0" * 64)
        return 200, {
            "search_metadata": {"status": "Success"},
            "exact_matches": [{"link": p["url"], "title": p["title"], "source": "loopback"} for p in pages if p["match"] == "full"],
            "visual_matches": [{"link": p["url"], "title": p["title"], "source": "loopback"} for p in pages if p["match"] != "full"],
            "knowledge_graph": [{"title": e} for e in entities[:3]],
        }

    def _serper(self, handler: BaseHTTPRequestHandler, _query: dict[str, list[str]], body: bytes | None) -> tuple[int, Any]:
        if handler.headers.get("X-API-KEY") != KEY:
            return 403, {"message": "Unauthorized.", "statusCode": 403}
        if "serper" in self.refuse:
            return 400, {"message": "Not enough credits", "statusCode": 400}
        request = json.loads(body or b"{}")
        hits = self.text_pages(str(request.get("q", "")), int(request.get("num", 10)))
        return 200, {
            "searchParameters": {"q": request.get("q"), "type": "search", "engine": "google"},
            "organic": [{"title": title, "link": f"{self.base}/bench/{pid}", "snippet": text[:300], "position": i + 1}
                        for i, (pid, title, text) in enumerate(hits)],
        }

    def _wikipedia(self, _handler: BaseHTTPRequestHandler, query: dict[str, list[str]], _body: bytes | None) -> tuple[int, Any]:
        if "wikipedia" in self.refuse:
            return 200, {"error": {"code": "internal_api_error", "info": "The search backend returned an error."}}
        wanted = words((query.get("gsrsearch") or [""])[0])
        limit = int((query.get("gsrlimit") or ["5"])[0])
        articles: dict[str, list[str]] = {}
        scores: Counter[str] = Counter()
        for title, sentence in self.wikipedia_sentences:
            overlap = len(wanted & words(f"{title} {sentence}"))
            if overlap:
                scores[title] += overlap
                articles.setdefault(title, []).append(sentence)
        best = [title for title, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
        return 200, {"batchcomplete": True, "query": {"pages": [
            {"pageid": 1000 + i, "ns": 0, "title": title, "index": i + 1, "extract": " ".join(articles[title][:3]),
             "fullurl": f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}"}
            for i, title in enumerate(best)
        ]}}
