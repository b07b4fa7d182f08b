"""The kernel's shared steps: the seed helper, the answer-taxonomy check, and the evidence step with the run's policy."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from debates.config_loader import load_config
from debates.session import sample_seed
from debates.strategy import RunContext, answer_taxonomy, derive_seed
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from retrieval.config import LeakageSettings, RetrievalConfig
from retrieval.policy import EvidencePolicy

POST = Sample(id="p1", text="Storm over the statue")
FACT_CHECK = Evidence(kind="web_page", url="https://www.snopes.com/fact-check/storm/", domain="www.snopes.com",
                      text="Fact check: the storm photo is a composite.")
NEWS = Evidence(kind="web_page", url="https://www.reuters.com/world/storm", domain="www.reuters.com", text="A storm hit.")


def test_a_seed_is_the_first_31_bits_of_the_sha256_of_its_parts() -> None:
    digest = hashlib.sha256(b"7:p1").digest()
    assert derive_seed(7, "p1") == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF == sample_seed(7, "p1")


def test_call_site_seeds_repeat_with_the_sample_and_differ_between_call_sites_and_samples() -> None:
    ctx, again, other = (RunContext(pool=BackendPool(), seed=seed) for seed in (sample_seed(0, "p1"), sample_seed(0, "p1"),
                                                                                 sample_seed(0, "p2")))
    sites = [("seat", "agent_a"), ("seat", "agent_b"), ("check", 0), ("check", 1), ("step", 3), ("verifier",)]
    seeds = [ctx.seed_for(*site) for site in sites]
    assert seeds == [again.seed_for(*site) for site in sites]
    assert len(set(seeds)) == len(sites) and all(0 <= s < 2**31 for s in seeds)
    assert not set(seeds) & {other.seed_for(*site) for site in sites}
    assert ctx.seed_for("check", 1) == derive_seed(ctx.seed, "check", 1)


def test_the_answer_taxonomy_check_names_the_configuration() -> None:
    config = load_config("agentm3d")
    assert answer_taxonomy(config, "m3d", Sample(text="x", taxonomy="binary")).name == "m3d"
    assert answer_taxonomy(config, "factcheck3", Sample(text="x", taxonomy="factcheck")).name == "factcheck3"
    with pytest.raises(InputError, match="the agentm3d configuration answers in m3d") as raised:
        answer_taxonomy(config, "m3d", Sample(text="x", taxonomy="factcheck"))
    assert raised.value.field == "taxonomy"


class CountingSource:
    def __init__(self, items: list[Evidence]) -> None:
        self.items = items
        self.calls = 0

    async def gather(self, sample: Sample, ledger: Any = None) -> list[Evidence]:
        self.calls += 1
        return list(self.items)


async def test_the_evidence_step_asks_the_source_once_and_screens_it_with_the_runs_policy() -> None:
    given = Evidence(kind="wikipedia", text="given with the sample")
    source = CountingSource([FACT_CHECK, NEWS])
    ctx = RunContext(pool=BackendPool(), evidence=[given], evidence_source=source)
    kept = await ctx.gather_evidence(POST)
    assert [e.text for e in kept] == [given.text, NEWS.text], "the default policy drops the fact-checking site"
    assert kept[1].reliability == "reliable", "an unrated source is rated from the shipped list"
    everything = await ctx.gather_evidence(POST, dropped=True)
    assert [e.kept for e in everything] == [True, False, True] and "factcheck_domain" in everything[1].reason
    assert await ctx.gather_evidence(POST, from_source=False) == [given]
    assert source.calls == 1, "the source is asked once per sample, however many agents ask"

    permissive = EvidencePolicy(RetrievalConfig(leakage=LeakageSettings(enabled=False)))
    ctx = RunContext(pool=BackendPool(), evidence_source=CountingSource([FACT_CHECK, NEWS]), evidence_policy=permissive)
    assert [e.domain for e in await ctx.gather_evidence(POST)] == ["www.snopes.com", "www.reuters.com"]


class Searcher:
    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return [FACT_CHECK, NEWS]


async def test_every_searcher_and_the_query_answerer_answer_through_the_runs_policy() -> None:
    ctx = RunContext(pool=BackendPool(), searchers={"web": Searcher()}, query_answerer=Searcher())
    for searcher in (ctx.searchers["web"], ctx.query_answerer):
        assert searcher is not None
        found = await searcher.answer("storm", POST)
        assert [(e.domain, e.kept) for e in found] == [("www.snopes.com", False), ("www.reuters.com", True)]
    wrapped = ctx.searchers["web"]
    assert ctx.evidence_policy.searcher(wrapped) is wrapped, "screened once, not once per hand it passes through"
