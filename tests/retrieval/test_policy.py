"""The run's evidence policy: one rater and one leakage filter, built from the run's retrieval settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from retrieval.config import LeakageSettings, RetrievalConfig
from retrieval.policy import EvidencePolicy
from retrieval.store import EvidenceStore
from tests.support.scripted import ScriptedClient, scripted_backend

POST = Sample(text="Storm over the statue")


def page(domain: str, **fields: Any) -> Evidence:
    return Evidence(kind="web_page", url=f"https://{domain}/story", domain=domain, text=f"a page on {domain}", **fields)


async def test_the_runs_leakage_settings_and_reliability_list_decide(tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("domain,rating,note\nrumours.example,satire,our own list\n")
    items = [page("www.snopes.com"), page("rumours.example"), page("watchdog.example")]

    default = await EvidencePolicy().screen(items, POST)
    assert [(e.kept, e.reliability) for e in default] == [(False, "factcheck"), (True, "unknown"), (True, "unknown")]

    settings = RetrievalConfig(reliability_list=ratings, leakage=LeakageSettings(extra_factcheck_domains=["watchdog.example"]))
    custom = await EvidencePolicy(settings).screen(items, POST)
    assert [(e.kept, e.reliability) for e in custom] == [(False, "factcheck"), (True, "satire"), (False, "unknown")]

    off = RetrievalConfig(reliability_list=ratings, leakage=LeakageSettings(enabled=False))
    assert all(e.kept for e in await EvidencePolicy(off).screen(items, POST)), "leakage.enabled: false drops nothing"


async def test_screening_leaves_what_a_run_path_already_decided() -> None:
    rated = page("rumours.example", reliability="reliable")
    dropped = page("news.example", kept=False, reason="same text as ev-1; kept once")
    screened = await EvidencePolicy().screen([rated, dropped], POST)
    assert screened == [rated, dropped]


async def test_unlisted_domains_are_judged_once_by_the_runs_backend_and_a_replay_without_a_judgement_stays_unknown(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(['{"rating": "unreliable", "reason": "anonymous rumour mill"}'])
    store = EvidenceStore(tmp_path / "ev.sqlite", "record")
    judged = EvidencePolicy(RetrievalConfig(), judge=scripted_backend(client), store=store)
    first = await judged.screen([page("rumours.example"), page("rumours.example")], POST)
    assert [e.reliability for e in first] == ["unreliable", "unreliable"] and len(client.calls) == 1
    store.close()

    not_asked = EvidencePolicy(RetrievalConfig(judge_unknown_domains=False), judge=scripted_backend(ScriptedClient([])))
    assert (await not_asked.screen([page("rumours.example")], POST))[0].reliability == "unknown"

    replay = EvidencePolicy(RetrievalConfig(), judge=scripted_backend(ScriptedClient([])),
                            store=EvidenceStore(tmp_path / "ev.sqlite", "replay"))
    assert (await replay.screen([page("other.example")], POST))[0].reliability == "unknown"


async def test_a_run_that_rates_no_source_asks_no_judge_and_shows_no_rating() -> None:
    """T2Agent's searches return snippets (paper line 307): ``rate_sources: false`` rates nothing, calls no model, and an
    agent reads the item's source and text with no reliability note."""
    client = ScriptedClient([])
    policy = EvidencePolicy(RetrievalConfig(rate_sources=False), judge=scripted_backend(client))
    screened = await policy.screen([page("rumours.example"), page("www.bbc.co.uk"), Evidence(kind="answer", text="a hit")], POST)
    assert [e.reliability for e in screened] == ["unrated"] * 3 and not client.calls
    assert "reliability" not in screened[0].quoted() and "rumours.example" in screened[0].quoted()
    assert "reliability: unknown" in page("rumours.example").quoted(), "a rated run still says what it knows"
