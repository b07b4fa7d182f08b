"""How AgentFact treats answers that are not what it asked for, and what its searches send: an over-long plan
field is cut and recorded (never a silent switch to searching the post), the fallbacks search the claim
alone, and without a strategist the query writer writes up to three queries for the claim, round after round."""

from __future__ import annotations

import json
from typing import Any

from debates.config_loader import load_config, with_overrides
from debates.session import run_sample
from debates.strategies.agentfact.board import clean_query
from debates.strategies.agentfact.config import AgentFactConfig
from m3d_agents.backends.factory import BackendPool
from m3d_agents.bounds import fit_to_bounds
from m3d_agents.sample import Sample
from retrieval.providers.base import SearchHit
from retrieval.pipeline import EvidencePipeline
from retrieval.config import RetrievalConfig
from debates.strategies.agentfact.schemas import plan_schema, query_schema
from tests.support.scripted import ScriptedClient, scripted_backend

POST = Sample(id="ferry", text="Claim: The harbour ferry sank on 3 May 2024.\nPost: It went down this morning, everyone saw it!")
EXPLANATION = json.dumps({"claim_understanding": "a ferry sank", "reasoning_logic": "nothing settles it",
                          "key_points": [{"point": "No evidence was found.", "evidence_ids": []}],
                          "label_3class": "unproven", "label_2class": "false", "confidence_level": 2})
JUDGEMENT = json.dumps({"claim_understanding": "a ferry sank", "steps": [{"step": "check", "analysis": "nothing found",
                        "evidence_ids": [], "image_ids": [], "note": "relevant evidence not found"}],
                        "direct_evidence_ids": [], "label": "unproven", "sufficiency": 2})


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        self.queries.append(query)
        return []


def pool_for(config: AgentFactConfig, answers: dict[str, list[str]]) -> tuple[AgentFactConfig, BackendPool, dict[str, ScriptedClient]]:
    config = config.model_copy(deep=True)
    pool, clients = BackendPool(), {}
    for seat in config.seats:
        seat.backend = f"b_{seat.role}"
        clients[seat.role] = ScriptedClient(list(answers.get(seat.role, [])))
        pool.add(scripted_backend(clients[seat.role], name=seat.backend))
    return config, pool, clients


def test_fitting_cuts_texts_and_lists_to_their_bounds_and_says_where() -> None:
    data: dict[str, Any] = {"reasoning_steps": [{"step": "s" * 200, "method": "origin_tracing", "details": "d"}] * 5,
                            "validation_list": [], "search_list": [{"information_needed": "n" * 250}]}
    fitted, cuts = fit_to_bounds(plan_schema(4, 3), data)
    plan_schema(4, 3).model_validate(fitted)
    assert cuts[0] == "reasoning_steps: 5 items cut to 4" and "reasoning_steps[0].step: 200 characters cut to 160" in cuts
    assert "search_list[0].information_needed: 250 characters cut to 200" in cuts
    assert fit_to_bounds(query_schema(2), {"queries": ["q" * 151, "b", "c"]})[1] == [
        "queries: 3 items cut to 2", "queries[0]: 151 characters cut to 150"]


def test_a_fallback_query_is_the_claim_on_one_line() -> None:
    assert clean_query(POST.text) == "The harbour ferry sank on 3 May 2024."
    assert clean_query("one line\n\nand  another") == "one line and another"
    assert len(clean_query("word " * 50).split()) == 32


async def test_an_over_long_plan_field_is_cut_and_recorded_not_replaced_by_a_search_of_the_post() -> None:
    long_plan = json.dumps({
        "reasoning_steps": [{"step": "Find the ferry operator's notice", "method": "primary_source", "details": "x" * 420}],
        "validation_list": [], "search_list": [{"information_needed": "harbour ferry service 3 May 2024"}],
    })
    config, pool, clients = pool_for(load_config("agentfact-closed"),  # type: ignore[arg-type]
                                     {"strategist": [long_plan] * 3, "reasoner": [JUDGEMENT], "explainer": [EXPLANATION]})
    verdict = await run_sample(config, POST, pool)
    notes = verdict.diagnostics.notes
    assert notes == ["strategist: plan 1 kept with fields cut to their bounds: reasoning_steps[0].details: 420 characters cut to 300"]
    assert "Find the ferry operator's notice [primary_source]: " + "x" * 300 + "\n" in clients["reasoner"].calls[0].prompt
    assert verdict.diagnostics.errors == [], "the plan was kept, so nothing fell back"


async def test_an_unreadable_plan_searches_the_claim_alone() -> None:
    config = with_overrides(load_config("agentfact-no-ir"), max_plans=1)
    config, pool, _clients = pool_for(config, {"strategist": ["no plan here"] * 3, "explainer": [EXPLANATION]})  # type: ignore[arg-type]
    searcher = Recording()
    verdict = await run_sample(config, POST, pool, searchers={"web": EvidencePipeline(web=[searcher], config=RetrievalConfig())})
    assert searcher.queries == ["The harbour ferry sank on 3 May 2024."], "no 'Claim:' prefix, no post, no newline"
    assert any("the claim is searched as it is" in e for e in verdict.diagnostics.errors)


async def test_without_a_strategist_the_query_writer_writes_up_to_three_queries_per_round() -> None:
    rounds = [["ferry sinking harbour 3 May 2024", "harbour ferry operator statement", "harbour ferry timetable May 2024"],
              ["coastguard harbour ferry incident May 2024"], ["harbour ferry sinking photo"]]
    config = load_config("agentfact-no-sp")
    config, pool, clients = pool_for(config, {  # type: ignore[arg-type]
        "retriever": [json.dumps({"queries": q}) for q in rounds], "explainer": [EXPLANATION]})
    searcher = Recording()
    verdict = await run_sample(config, POST, pool, searchers={"web": EvidencePipeline(web=[searcher], config=RetrievalConfig())})
    assert searcher.queries == [q for round_ in rounds for q in round_], "three rounds (max_plans), three queries in the first"
    prompts = [call.prompt for call in clients["retriever"].calls]
    assert all("Write at most 3 queries" in p for p in prompts)
    assert '"ferry sinking harbour 3 may 2024"' in prompts[1], "a later round is shown the queries already run"
    assert verdict.diagnostics.stop_reason == "plans exhausted"


async def test_on_a_two_label_data_set_unproven_counts_against_the_claim_as_the_coarse_label_does() -> None:
    plan = json.dumps({"reasoning_steps": [], "validation_list": [], "search_list": []})
    for taxonomy, expected in (("ooc", "falsified"), ("binary", "fake"), ("factcheck", "unproven")):
        config, pool, _ = pool_for(load_config("agentfact-closed"),  # type: ignore[arg-type]
                                   {"strategist": [plan], "reasoner": [JUDGEMENT], "explainer": [EXPLANATION]})
        post = POST.model_copy(update={"taxonomy": taxonomy})
        verdict = await run_sample(config, post, pool)
        assert verdict.label == expected, taxonomy
