"""The leakage filter, source reliability, and the record/replay evidence store."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from retrieval.config import LeakageSettings
from retrieval.domains import domain_candidates, registered_domain
from retrieval.leakage import Candidate, LeakageFilter, rule_of
from retrieval.providers.base import SearchHit
from retrieval.reliability import DomainRatings, ReliabilityRater
from retrieval.store import EvidenceStore, StoreMiss, entry_key
from tests.support.scripted import ScriptedClient, scripted_backend


def page(url: str, published: date | None = None, claim_review: bool = False) -> Candidate:
    from retrieval.domains import host_of

    return Candidate(
        evidence=Evidence(kind="web_page", url=url, domain=host_of(url), published=published, text=f"text of {url}"),
        claim_review=claim_review,
    )


def test_registered_domains_are_computed_offline() -> None:
    assert registered_domain("news.bbc.co.uk") == "bbc.co.uk"
    assert domain_candidates("www.factcheck.afp.com") == ["factcheck.afp.com", "afp.com"]
    assert domain_candidates("apnews.com") == ["apnews.com"]


def test_leakage_rules_drop_and_count() -> None:
    candidates = [
        page("https://www.snopes.com/fact-check/moon-cheese/"),
        page("https://factcheck.afp.com/doc.afp.com.123"),
        page("https://apnews.com/article/storm-123"),
        page("https://www.afp.com/en/news/123"),
        page("https://notsnopes.com/story"),
        page("https://snopes.com.example.net/story"),
        page("https://example.org/review", claim_review=True),
        page("https://example.org/later", published=date(2024, 5, 2)),
        page("https://example.org/before", published=date(2024, 4, 30)),
        page("https://example.org/undated"),
    ]
    out, report = LeakageFilter().apply(candidates, claim_date=date(2024, 5, 1))
    dropped = {e.url: e.reason for e in out if not e.kept}
    assert set(dropped) == {
        "https://www.snopes.com/fact-check/moon-cheese/",
        "https://factcheck.afp.com/doc.afp.com.123",
        "https://example.org/review",
        "https://example.org/later",
    }
    assert "factcheck_domain" in dropped["https://www.snopes.com/fact-check/moon-cheese/"]
    assert "ClaimReview" in dropped["https://example.org/review"]
    assert "after the claim date 2024-05-01" in dropped["https://example.org/later"]
    assert report.dropped == {"factcheck_substring": 0, "factcheck_domain": 2, "factcheck_path": 0, "claim_review": 1,
                              "after_claim_date": 1, "undated": 0}, "the substring and undated rules are off by default"
    assert report.checked == 10 and len(out) == 10


def test_leakage_without_claim_date_and_when_disabled() -> None:
    later = [page("https://example.org/later", published=date(2030, 1, 1))]
    out, report = LeakageFilter().apply(later, claim_date=None)
    assert out[0].kept and report.total_dropped == 0
    off = LeakageFilter(settings=LeakageSettings(enabled=False))
    out, report = off.apply([page("https://snopes.com/x")], claim_date=None)
    assert out[0].kept and report.total_dropped == 0
    extra = LeakageFilter(settings=LeakageSettings(extra_factcheck_domains=["mycheck.org"]))
    assert extra.is_factcheck_domain("www.mycheck.org") and not extra.is_factcheck_domain("apnews.com")


async def test_reliability_from_the_shipped_list_matches_labels_not_substrings() -> None:
    rater = ReliabilityRater()
    assert (await rater.rate("www.reuters.com"))[0] == "reliable"
    assert (await rater.rate("uk.reuters.com"))[0] == "reliable"
    assert (await rater.rate("theonion.com"))[0] == "satire"
    assert (await rater.rate("factcheck.afp.com"))[0] == "factcheck"
    assert (await rater.rate("afp.com"))[0] == "reliable"
    assert (await rater.rate("reuters.com.evil.example"))[0] == "unknown"
    assert (await rater.rate(None))[0] == "unknown"


async def test_user_list_overrides_and_bad_rows_are_named(tmp_path: Path) -> None:
    mine = tmp_path / "mine.csv"
    mine.write_text("domain,rating,note\n# comment\nreuters.com,unsure,my own view\nlocal-news.example,reliable,\n")
    ratings = DomainRatings.load(mine)
    rater = ReliabilityRater(ratings)
    assert (await rater.rate("reuters.com")) == ("unsure", "user list: reuters.com (my own view)")
    assert (await rater.rate("local-news.example"))[0] == "reliable"
    bad = tmp_path / "bad.csv"
    bad.write_text("domain,rating,note\nexample.org,great,\n")
    with pytest.raises(InputError, match="rating 'great' is not one of"):
        DomainRatings.load(bad)
    with pytest.raises(InputError, match="does not exist"):
        DomainRatings.load(tmp_path / "missing.csv")


async def test_unknown_domains_get_a_cached_model_judgement(tmp_path: Path) -> None:
    client = ScriptedClient(['{"rating": "unreliable", "reason": "Known for invented stories."}'])
    store = EvidenceStore(tmp_path / "ev.sqlite")
    rater = ReliabilityRater(judge=scripted_backend(client), store=store)
    ledger = UsageLedger()
    assert await rater.rate("news.madeup-site.org", ledger) == ("unreliable", "model: Known for invented stories.")
    assert await rater.rate("other.madeup-site.org", ledger) == ("unreliable", "model: Known for invented stories.")
    assert len(client.calls) == 1 and "madeup-site.org" in client.calls[0].prompt
    again = ReliabilityRater(judge=scripted_backend(ScriptedClient([])), store=store)
    assert (await again.rate("madeup-site.org"))[0] == "unreliable"
    assert ledger.calls(role="reliability") == 1


async def test_an_unreadable_judgement_leaves_the_domain_unknown() -> None:
    client = ScriptedClient(["I think it is fine", "probably ok", "no idea"])
    rater = ReliabilityRater(judge=scripted_backend(client))
    assert (await rater.rate("mystery.example"))[0] == "unknown"
    assert len(client.calls) == 3


async def test_store_record_replay_refresh(tmp_path: Path) -> None:
    path = tmp_path / "evidence.sqlite"
    calls: list[str] = []

    async def search() -> list[SearchHit]:
        calls.append("x")
        return [SearchHit(url=f"https://example.org/{len(calls)}", provider="web")]

    record = EvidenceStore(path, "record")
    first = await record.fetch("web", "storm photo", search, list[SearchHit])
    second = await record.fetch("web", "storm photo", search, list[SearchHit])
    assert first == second and len(calls) == 1 and record.recorded == 1 and record.reused == 1
    record.close()

    replay = EvidenceStore(path, "replay")
    assert await replay.fetch("web", "storm photo", search, list[SearchHit]) == first
    with pytest.raises(StoreMiss, match=entry_key("web", "other query")):
        await replay.fetch("web", "other query", search, list[SearchHit])
    assert len(calls) == 1

    refresh = EvidenceStore(path, "refresh")
    fresh = await refresh.fetch("web", "storm photo", search, list[SearchHit])
    assert fresh[0].url.endswith("/2") and len(calls) == 2
    assert (await EvidenceStore(path, "replay").fetch("web", "storm photo", search, list[SearchHit])) == fresh

    with pytest.raises(InputError, match="replay-only mode needs an existing store"):
        EvidenceStore(tmp_path / "none.sqlite", "replay")


def test_fact_check_sections_of_news_sites_are_dropped_by_their_path() -> None:
    kept_urls = [
        "https://www.reuters.com/world/europe/storm-hits-coast-2023-04-10/",
        "https://apnews.com/article/storm-123",
        "https://www.bbc.co.uk/news/uk-12345",
        "https://example.org/how-to-check-facts",
    ]
    dropped_urls = [
        "https://www.reuters.com/fact-check/photo-shows-old-storm-2023-04-11/",
        "https://apnews.com/article/fact-check-bridge-collapse-photo-123",
        "https://www.bbc.co.uk/news/reality_check",
        "https://eu.usatoday.com/story/news/factcheck/2023/05/02/fact-check-photo/123/",
    ]
    out, report = LeakageFilter().apply([page(u) for u in kept_urls + dropped_urls], claim_date=None)
    assert [e.url for e in out if e.kept] == kept_urls
    assert report.dropped["factcheck_path"] == 4 and report.dropped["factcheck_domain"] == 0
    assert all(rule_of(e) == "factcheck_path" for e in out if not e.kept)
    assert all(rule_of(e) is None for e in out if e.kept)
    off = LeakageFilter(settings=LeakageSettings(drop_factcheck_paths=False))
    assert all(e.kept for e in off.apply([page(dropped_urls[0])], claim_date=None)[0])


def test_the_fact_checkers_agentfact_filters_are_rated_factcheck() -> None:
    ratings = DomainRatings.shipped()
    for domain in ("hoax-slayer.net", "mediabiasfactcheck.com", "poynter.org", "factnameh.com", "faktisk.no",
                   "pagellapolitica.it", "factcheck.ge", "dubawa.org", "tsek.ph", "dpa-factchecking.com"):
        found = ratings.lookup(domain)
        assert found is not None and found.rating == "factcheck", domain
    assert LeakageFilter().is_factcheck_domain("www.poynter.org")
