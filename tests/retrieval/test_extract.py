"""Scraping real pages served over loopback: body, metadata, the newspaper3k fallback, ClaimReview."""

from __future__ import annotations

import json

import pytest

from benchmarks.extraction import page_counts, page_precision, page_recall, score
from retrieval.extract import combine_bodies, extract_article, extract_body, has_claim_review, is_block_page
from retrieval.fetch import Fetcher, FetchLimits, decode_body
from retrieval.guards import FetchGuard
from tests.support.paths import shared_data
from tests.support.page_server import PageServer

WSJ = "042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856"
BARRONS = "f8ff621a0b9b7646cc0d57d37416feabba2bf78ef5dd0bfc5b080f9f97bbe584"


def truth(key: str) -> dict[str, str]:
    data = json.loads(shared_data("article-extraction-benchmark", "ground-truth.json").read_text())
    return dict(data[key])


def f1(true: str, predicted: str) -> float:
    counts = page_counts(true, predicted)
    p, r = page_precision(*counts), page_recall(*counts)
    return 2 * p * r / (p + r) if p + r else 0.0


async def test_fetch_and_extract_a_real_article_with_metadata() -> None:
    expected = truth(WSJ)
    with PageServer() as server:
        fetcher = Fetcher(FetchLimits(), FetchGuard(allow_loopback=True))
        page = await fetcher.get_page(f"{server.base}/bench/{WSJ}")
        await fetcher.close()
    article = extract_article(page.text, expected["url"])
    assert f1(expected["articleBody"], article.text) > 0.95
    assert article.title and "Stadia" in article.title
    assert article.language == "en"
    assert article.published is not None and article.published.year == 2019
    assert article.method == "trafilatura"
    assert article.claim_review is False


def test_newspaper3k_takes_over_when_trafilatura_keeps_only_a_fragment() -> None:
    import gzip

    expected = truth(BARRONS)
    html = gzip.decompress(shared_data("article-extraction-benchmark", "html", f"{BARRONS}.html.gz").read_bytes()).decode()
    text, method = extract_body(html, expected["url"])
    assert method == "newspaper3k"
    assert f1(expected["articleBody"], text) > 0.9


def test_body_choice_rule() -> None:
    article = "A paragraph of the article. " * 40
    assert combine_bodies(article, article[:300]) == (article.strip(), "trafilatura")
    assert combine_bodies("Photo: Reuters", article) == (article.strip(), "newspaper3k")
    assert combine_bodies("", "") == ("", "none")
    assert combine_bodies("only trafilatura", "") == ("only trafilatura", "trafilatura")


def test_mr2_chinese_page_is_flagged_with_its_language() -> None:
    path = shared_data("mr2-sample", "queries_dataset", "merge", "img_html", "430", "736.html")
    article = extract_article(decode_body(path.read_bytes()), "https://news.sina.com.cn/x")
    assert article.text and article.language == "zh"


CLAIM_REVIEW_JSONLD = """<html><head><script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [{"@type": "WebPage"},
 {"@type": "ClaimReview", "claimReviewed": "The moon is cheese", "reviewRating": {"alternateName": "False"}}]}
</script></head><body><p>Our review of the claim.</p></body></html>"""
CLAIM_REVIEW_MICRODATA = '<div itemscope itemtype="https://schema.org/ClaimReview"><p>Rated false</p></div>'
NOT_A_REVIEW = "<html><body><p>An article that mentions ClaimReview markup in passing.</p></body></html>"


def test_claim_review_markup_is_detected() -> None:
    assert has_claim_review(CLAIM_REVIEW_JSONLD)
    assert has_claim_review(CLAIM_REVIEW_MICRODATA)
    assert not has_claim_review(NOT_A_REVIEW)
    assert not has_claim_review("<html><script type='application/ld+json'>{not json ClaimReview</script></html>")


def test_bot_challenge_pages_give_no_text() -> None:
    assert is_block_page("Just a moment...", "")
    assert is_block_page(None, "www.example.com Checking if the site connection is secure")
    assert not is_block_page("Storm hits coast", "The storm made landfall at noon.")
    html = "<html><head><title>Just a moment...</title></head><body><p>Checking if the site connection is secure</p></body></html>"
    assert extract_article(html, "https://example.org/").text == ""


def test_benchmark_metric_matches_its_definition() -> None:
    assert page_counts("a b c d e", "a b c d e") == (1.0, 0.0, 0.0)
    tp, fp, fn = page_counts("one two three four five", "one two three four six")
    assert (tp, fp, fn) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert page_counts("Ünïcode wörds are tokens too", "") == (0.0, 0.0, 1.0)
    figures = score([("a b c d e", "a b c d e"), ("one two three four five", ""), ("", "x y z w")])
    assert figures["precision"] == pytest.approx(0.5)
    assert figures["recall"] == pytest.approx(0.5)
    assert figures["f1"] == pytest.approx(0.5)
