"""Article text and metadata from a page's HTML: newspaper3k and trafilatura together.

Measured on the article-extraction benchmark (``benchmarks/extraction.py``), trafilatura tuned for
precision and without comments finds the body more accurately than newspaper3k, but now and then
it keeps only a fragment of the article (a caption, a teaser). newspaper3k rarely fails that way,
so the body is trafilatura's unless it is less than half as long as newspaper3k's, in which case
newspaper3k's wins. Metadata (title, authors, publication date) comes from newspaper3k first and
from trafilatura's metadata extractor where newspaper3k found none.

Both libraries parse with lxml, which crashes the process on some hostile pages and when several
threads drive it at once, so the run never calls them itself: :func:`extract_page` sends the page to
a worker of the parser pool (:mod:`m3d_agents.isolation`), where :func:`page_from_body` runs
within the pool's time and memory limits. A page that crashes, hangs or exhausts its worker
raises :class:`~m3d_agents.isolation.ItemLost`, naming the page and why.
"""

from __future__ import annotations

import logging
import warnings
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from m3d_agents.isolation import Item, parse_async
from m3d_agents.language import page_language
from m3d_agents.safe_json import loads_bounded
from retrieval.domains import use_offline_suffix_list

log = logging.getLogger(__name__)

ExtractionMethod = Literal["trafilatura", "newspaper3k", "none"]
FALLBACK_RATIO = 0.5
PLACEHOLDER_URL = "http://unknown.invalid/"


class ExtractedPage(BaseModel):
    url: str | None = None
    title: str | None = None
    authors: list[str] = Field(default_factory=list)
    published: date | None = None
    language: str | None = None
    text: str = ""
    method: ExtractionMethod = "none"
    claim_review: bool = Field(False, description="the page carries schema.org ClaimReview markup")


async def extract_page(body: str | bytes, url: str | None) -> ExtractedPage:
    """The page's article, extracted in a worker of the parser pool; ``body`` as fetched (text) or saved (bytes)."""
    return await parse_async(Item("page", url or "(no address)", "the extractor"), page_from_body, body, url)


def page_from_body(body: str | bytes, url: str | None) -> ExtractedPage:
    """What :func:`extract_page` asks a parser worker: decode the bytes (declared or guessed charset), then extract."""
    if isinstance(body, bytes):
        from retrieval.fetch import decode_body

        body = decode_body(body)
    return extract_article(body, url)


def newspaper_article(html: str, url: str | None) -> Any:
    """A parsed newspaper3k Article; it never touches the network (no download, no image fetching)."""
    use_offline_suffix_list()
    from newspaper import Article, Config

    config = Config()
    config.fetch_images = False
    config.memoize_articles = False
    article = Article(url or PLACEHOLDER_URL, config=config)
    article.download(input_html=html)
    article.parse()
    return article


def trafilatura_text(html: str, url: str | None) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url, include_comments=False, favor_precision=True) or ""


def combine_bodies(trafilatura_body: str, newspaper_body: str) -> tuple[str, ExtractionMethod]:
    """Pick the body; see the module docstring for why this rule."""
    traf, news = trafilatura_body.strip(), newspaper_body.strip()
    if traf and len(traf) >= FALLBACK_RATIO * len(news):
        return traf, "trafilatura"
    if news:
        return news, "newspaper3k"
    return "", "none"


def extract_body(html: str, url: str | None = None) -> tuple[str, ExtractionMethod]:
    """Only the article body (what the benchmark scores)."""
    news = _safe(lambda: newspaper_article(html, url).text, "")
    return combine_bodies(_safe(lambda: trafilatura_text(html, url), ""), news)


_BLOCK_PAGE_MARKERS = (
    "checking if the site connection is secure",
    "used cloudflare to restrict access",
    "attention required! | cloudflare",
    "enable javascript and cookies to continue",
    "verify you are human",
)


def is_block_page(title: str | None, text: str) -> bool:
    """A bot-challenge or access-denied page: its text is about the crawler, not about the article."""
    head = f"{title or ''} {text[:600]}".lower()
    return (title or "").strip().lower() == "just a moment..." or any(m in head for m in _BLOCK_PAGE_MARKERS)


def extract_article(html: str, url: str | None = None) -> ExtractedPage:
    """Body, title, authors, publication date, language, and whether the page is a fact-check review.

    A bot-challenge page gives an empty body, so callers fall back to what the search said about it.
    """
    article = _safe(lambda: newspaper_article(html, url), None)
    news_text = getattr(article, "text", "") or ""
    text, method = combine_bodies(_safe(lambda: trafilatura_text(html, url), ""), news_text)
    if is_block_page(getattr(article, "title", None), text):
        text, method = "", "none"
    title = (getattr(article, "title", "") or "").strip() or None
    authors = list(getattr(article, "authors", []) or [])
    published = _as_date(getattr(article, "publish_date", None))
    declared = getattr(article, "meta_lang", None) or None
    if title is None or not authors or published is None:
        meta = _safe(lambda: _trafilatura_metadata(html, url), {})
        title = title or meta.get("title")
        authors = authors or ([meta["author"]] if meta.get("author") else [])
        published = published or _as_date(meta.get("date"))
    return ExtractedPage(
        url=url,
        title=title,
        authors=authors,
        published=published,
        language=page_language(text, declared),
        text=text,
        method=method,
        claim_review=has_claim_review(html),
    )


def _trafilatura_metadata(html: str, url: str | None) -> dict[str, Any]:
    import trafilatura

    document = trafilatura.extract_metadata(html, default_url=url)
    return {"title": document.title, "author": document.author, "date": document.date}


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and value:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _safe(work: Any, default: Any) -> Any:
    """Extractors choke on some real pages; one failing extractor must not lose the other's result.

    Running out of memory is not choking: it ends the item (the parser pool reports it by its limit)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return work()
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - third-party parsers raise anything on broken HTML
        log.info("extractor failed: %s: %s", type(exc).__name__, exc)
        return default


def has_claim_review(html: str) -> bool:
    """schema.org ClaimReview in JSON-LD, microdata or RDFa: the page is itself a fact-check of a claim."""
    if "claimreview" not in html.lower():
        return False
    from lxml import html as lxml_html

    try:
        tree = lxml_html.fromstring(html)
    except Exception:  # noqa: BLE001 - unparsable HTML has no usable markup
        return False
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        try:
            data = loads_bounded(script.text_content() or "null")
        except ValueError:  # not JSON, or nested past any real mark-up (JsonTooDeep)
            continue
        if _mentions_claim_review(data):
            return True
    for value in tree.xpath("//@itemtype | //@typeof"):
        if any(part.rstrip("/").split("/")[-1].lower() == "claimreview" for part in str(value).split()):
            return True
    return False


def _mentions_claim_review(data: Any) -> bool:
    """Whether a ``@type`` anywhere in the JSON-LD names ClaimReview; walked without recursion."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            kind = item.get("@type")
            kinds = kind if isinstance(kind, list) else [kind]
            if any(isinstance(k, str) and k.split("/")[-1].lower() == "claimreview" for k in kinds):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
