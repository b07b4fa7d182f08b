"""The golden scripted AgentFact run end to end: one scripted client per agent, a corpus with leaky pages,
a stub reverse image search, the real board, policy, participants, pipeline and verdict assembly.

The trace: the strategist plans one sentence and two background needs; round 1 keeps E1 and E2
(2 < 3, retrieval goes on); round 2 keeps E3 and E4 (4 >= 3); the screener keeps E1 and E3 (false,
sufficiency 3), so the reasoner reads E1 and E3 (false, 3: not confident); round 3 keeps E5 and
empties the queue; the screener keeps E5 (false, 5: a screener never ends the run), so the reasoner
reads E1, E3 and E5 (false, 5): confident; the explainer first cites E9, unknown, is asked again,
then cites E1, E5 and I1.
"""

from __future__ import annotations

import json
import warnings
from datetime import date
from typing import Any, Callable, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.strategies.agentfact.config import AgentFactConfig
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.datasets import load_dataset
from m3d_agents.sample import Sample
from m3d_agents.verdict import TranscriptTurn, Verdict
from retrieval.config import RetrievalConfig
from retrieval.pipeline import EvidencePipeline
from retrieval.providers.base import ImageQuery, ReverseImageResult, SearchHit
from retrieval.providers.local_corpus import read_jsonl_documents
from tests.support.paths import REPO
from tests.support.scripted import ScriptedClient, scripted_backend, text_of

FIXTURES = REPO / "tests" / "fixtures"
CORPUS = {d.id: d for d in read_jsonl_documents(FIXTURES / "agentfact" / "corpus.jsonl", "text", "id", "title", "url")}
SENTENCE = "The new Harbour Street bridge fell into the river on day one."
OPENING = "Harbour Street footbridge opening March 2023"
DEMOLITION = "Mill Lane bridge demolition 2019 photo"
RESULTS = {SENTENCE: ["d1", "d3", "d8"], OPENING: ["d2", "d4", "d6"], DEMOLITION: ["d7", "d5"]}
LEAKED = ["snopes.com", "reuters.com/fact-check", "apnews.com", "Rating: False", "still standing"]
Responder = Callable[[Sequence[LLMMessage], Mapping[str, Any]], str]


class KeyedSearch:
    """Web search over the corpus documents, answering each scripted query with fixed documents."""

    name = "keyed-corpus"

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        self.queries.append(query)
        return [
            SearchHit(url=str(CORPUS[d].url), title=CORPUS[d].title, snippet=CORPUS[d].text, provider=self.name, rank=rank,
                      published=CORPUS[d].published)
            for rank, d in enumerate(RESULTS.get(query, [])[:limit])
        ]


class StubLens:
    """Reverse image search: a full match on a news site, and the fact-check article itself."""

    name = "stub-lens"

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        return ReverseImageResult(provider=self.name, pages=[
            SearchHit(url="https://harbourtongazette.example/gallery/2019-demolition", title="Mill Lane demolition, 2019",
                      snippet="Photo gallery: the old Mill Lane bridge falls into the river during its demolition in June 2019.",
                      provider=self.name, match="full", published=date(2019, 6, 12)),
            SearchHit(url="https://www.snopes.com/fact-check/footbridge-photo-2019/", title="Did the footbridge collapse?",
                      snippet="Fact check: the photo is from 2019. Rating: False.", provider=self.name, rank=1, match="partial"),
        ])


def task(messages: Sequence[LLMMessage]) -> str:
    prompt = text_of(messages)
    return prompt.split("Task: agentfact/", 1)[1].split()[0] if "Task: agentfact/" in prompt else ""


def step(ids: list[str], analysis: str = "what the evidence shows") -> dict[str, Any]:
    return {"step": "check", "analysis": analysis, "evidence_ids": ids, "image_ids": [], "note": "uses evidence"}


def judgement(ids: list[str], label: str, sufficiency: int) -> str:
    return json.dumps({"claim_understanding": "the bridge collapsed on opening day", "steps": [step(ids)],
                       "direct_evidence_ids": [], "label": label, "sufficiency": sufficiency})


def explanation(ids: list[str], label: str = "false") -> str:
    return json.dumps({
        "claim_understanding": "the post says the bridge collapsed on its opening day",
        "reasoning_logic": "Reliable reports show the bridge open; the photo shows a 2019 demolition.",
        "key_points": [{"point": "The council and the herald report the bridge open.", "evidence_ids": ids}],
        "label_3class": label, "label_2class": "false", "confidence_level": 5,
    })


PLAN = json.dumps({
    "reasoning_steps": [{"step": "Trace the photo", "method": "reverse_image_search", "details": "find where it first appeared"},
                        {"step": "Check the bridge's state", "method": "cross_verification", "details": "news and council"}],
    "validation_list": [{"sentence": SENTENCE, "explanation": "the core claim"}],
    "search_list": [{"information_needed": "when the footbridge opened"}, {"information_needed": "origin of the collapse photo"}],
})


def scripts(explainer: list[str] | Responder) -> dict[str, list[str] | Responder]:
    return {
        "strategist": [PLAN],
        "retriever": [json.dumps({"queries": [OPENING, DEMOLITION]})],
        "visual_analyst": [json.dumps({"claim_understanding": "the photo shows the new bridge collapsing",
                                       "comparison": "the page dates the image to 2019", "miscaption_rate": 90,
                                       "reason": "the photo shows a 2019 demolition, not the new bridge"})],
        "screener": [judgement(["E1", "E3"], "false", 3), judgement(["E5"], "false", 5)],
        "reasoner": [judgement(["E1", "E3"], "false", 3), judgement(["E1", "E3", "E5"], "false", 5)],
        "explainer": explainer,
    }


def sample() -> Sample:
    return load_dataset(f"rwpost:{FIXTURES / 'datasets/AgentFact/RW_Post_dataset/rwpost_dev_main.jsonl'}").samples[0]


def seat_pool(config: AgentFactConfig, answers: Mapping[str, list[str] | Responder]) -> tuple[AgentFactConfig, BackendPool, dict[str, ScriptedClient]]:
    config = config.model_copy(deep=True)
    pool, clients = BackendPool(), {}
    for seat in config.seats:
        seat.backend = f"b_{seat.role}"
        script = answers.get(seat.role, [])
        clients[seat.role] = ScriptedClient(list(script) if isinstance(script, list) else script)
        pool.add(scripted_backend(clients[seat.role], name=seat.backend))
    return config, pool, clients


async def golden(explainer: list[str] | Responder, **options: Any) -> tuple[Verdict, dict[str, ScriptedClient], list[TranscriptTurn]]:
    config, pool, clients = seat_pool(load_config("agentfact"), scripts(explainer))  # type: ignore[arg-type]
    streamed: list[TranscriptTurn] = []
    verdict = await run_sample(
        config, sample(), pool,
        searchers={"web": EvidencePipeline(web=[KeyedSearch()], config=RetrievalConfig(per_query_items=3))},
        evidence_source=EvidencePipeline(reverse=[StubLens()], config=RetrievalConfig(caption_search=False)),
        on_turn=streamed.append, **options,
    )
    return verdict, clients, streamed


async def test_the_golden_trace_runs_as_scripted() -> None:
    verdict, clients, streamed = await golden([explanation(["E9"]), explanation(["E1", "E5", "I1"])])
    speakers = [t.speaker for t in verdict.transcript]
    assert sorted(speakers[:2]) == ["strategist", "visual_analyst"]
    assert speakers[2:] == ["retriever", "retriever", "screener", "reasoner", "retriever", "screener", "reasoner", "explainer"]
    assert [t.speaker for t in streamed] == speakers, "every finished turn is streamed as it finishes"
    diagnostics = verdict.diagnostics
    assert diagnostics.steps == 4 and diagnostics.stop_reason == "confident", "reasoning turns are the steps"
    assert diagnostics.leakage == {"factcheck_substring": 0, "factcheck_domain": 2, "factcheck_path": 1, "claim_review": 0,
                                   "after_claim_date": 1, "undated": 0}

    assert verdict.taxonomy == "factcheck" and verdict.label == "false" and verdict.confidence == 1.0
    assert verdict.accounting.parse_retries == 1
    explained = verdict.explanation
    assert explained is not None and explained.dropped_citations == 0
    display = explained.display_ids
    assert [display[i] for i in explained.cited_ids()] == ["E1", "E5", "I1"]
    assert set(explained.cited_ids()) <= set(verdict.evidence_ids) <= {e.id for e in verdict.evidence}
    assert sorted(display.values()) == ["E1", "E3", "E5", "I1"], "the explainer was shown the useful pool and the image"

    pool = {row.id: row for row in diagnostics.pool}
    assert [pool[d].source.split("/")[2] for d in ("E1", "E2", "E3", "E4", "E5")] == [
        "harbourton.gov.example", "harbourton-eats.example", "harbourton-herald.example", "www.theonion.com",
        "harbourtongazette.example"]
    for dropped in ("E2", "E4"):
        assert pool[dropped].kept is False and pool[dropped].reason == "not used by the screener"
    assert pool["E4"].reliability == "satire"

    prompts = [call.prompt for client in clients.values() for call in client.calls]
    for leaked in LEAKED:
        assert not any(leaked in prompt for prompt in prompts), leaked
    assert any("[E4] reliability: satire" in call.prompt and "theonion.com" in call.prompt
               for call in clients["screener"].calls)
    assert "[E2]" not in clients["reasoner"].calls[1].prompt and "[E5]" in clients["reasoner"].calls[1].prompt
    explainer_prompt = clients["explainer"].calls[0].prompt
    assert all(f"{n}. {role}: label false" in explainer_prompt for n, role in enumerate(["screener", "reasoner"] * 2, start=1)), \
        "the explainer reads every reasoning output, with the ids each used"
    assert explainer_prompt.count("claim understood as:") == 4

    by_role = {role: usage.calls for role, usage in verdict.accounting.by_role.items()}
    assert by_role == {"strategist": 1, "query_writer": 1, "miscaption": 1, "screener": 2, "reasoner": 2, "explainer": 2}
    assert verdict.accounting.model_calls == 9

    image = next(f for f in verdict.findings if f.summary.startswith("[I1]"))
    assert "relationship=same_source (from the search's full match; unavailable: backend has no vision)" in image.summary
    assert "tampering=unavailable: backend has no vision" in image.summary and "miscaption=90" in image.summary
    assert any("deepfake score unavailable: no learned detector configured" in f.summary for f in verdict.findings)
    unavailable = diagnostics.unavailable
    assert {"image_matching", "tampering", "miscaption_image", "deepfake", "post_image:strategist"} <= set(unavailable)
    assert any(f.summary.startswith("[unavailable] image_matching") for f in verdict.findings)
    assert all(isinstance(m.content, str) for client in clients.values() for call in client.calls for m in call.messages), \
        "a text-only backend is sent no image"
    assert explained.cited_all_answers == 4 and explained.unknown_all_answers == 1, "the retry that fixed E9 is counted"
    review = verdict.review_record()
    assert review.predicted_authenticity_key_points[0].evidence_ids == ["E1", "E5", "I1"]


async def test_an_explainer_that_keeps_citing_an_unknown_id_keeps_only_its_valid_ids() -> None:
    verdict, _clients, _ = await golden([explanation(["E1", "E9"])] * 3)
    explained = verdict.explanation
    assert explained is not None and explained.dropped_citations == 1
    assert [explained.display_ids[i] for i in explained.cited_ids()] == ["E1"]
    assert verdict.accounting.parse_retries == 2 and verdict.label == "false"


async def test_an_explainer_that_stays_unreadable_gives_an_abstention_with_its_reason() -> None:
    verdict, _clients, _ = await golden(["I think it is false."] * 3)
    assert verdict.abstained and verdict.label is None
    assert verdict.abstain_reason is not None and "could not be read after 3 attempts" in verdict.abstain_reason
    assert verdict.explanation is None and verdict.evidence, "the evidence gathered is still reported"


async def test_the_bounded_setting_reasons_over_the_gold_evidence_only() -> None:
    loaded = load_dataset(f"rwpost:{FIXTURES / 'datasets/AgentFact/RW_Post_dataset/rwpost_dev_main.jsonl'}")
    post = loaded.samples[0]
    answers: dict[str, list[str] | Responder] = {
        "strategist": [PLAN], "reasoner": [judgement(["E1", "E2"], "false", 3)], "explainer": [explanation(["E1", "E2"])],
    }
    config, pool, clients = seat_pool(load_config("agentfact-bounded"), answers)  # type: ignore[arg-type]
    verdict = await run_sample(config, post, pool, gold_evidence=loaded.gold_evidence[post.id])
    assert [t.speaker for t in verdict.transcript] == ["strategist", "reasoner", "explainer"]
    assert verdict.diagnostics.stop_reason == "single pass" and verdict.accounting.model_calls == 3
    reasoner_prompt = clients["reasoner"].calls[0].prompt
    assert all(f"[E{i}]" in reasoner_prompt for i in (1, 2, 3))
    assert "14 March 2023" in reasoner_prompt
    assert "gold" not in clients["strategist"].calls[0].prompt and "14 March 2023" not in clients["strategist"].calls[0].prompt
    assert verdict.explanation is not None and verdict.explanation.cited_ids() == ["E1", "E2"]
    assert {e.id for e in verdict.evidence} == {"E1", "E2", "E3"}


async def test_the_bounded_setting_without_gold_evidence_is_an_input_error() -> None:
    from m3d_agents.errors import InputError

    config, pool, _ = seat_pool(load_config("agentfact-bounded"), {})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="data set's own evidence"):
        await run_sample(config, sample(), pool)


async def test_the_closed_book_setting_never_sees_gold_evidence() -> None:
    loaded = load_dataset(f"rwpost:{FIXTURES / 'datasets/AgentFact/RW_Post_dataset/rwpost_dev_main.jsonl'}")
    post = loaded.samples[0]
    answers: dict[str, list[str] | Responder] = {
        "strategist": [PLAN], "reasoner": [judgement([], "unproven", 2)], "explainer": [explanation([], "unproven")],
    }
    config, pool, clients = seat_pool(load_config("agentfact-closed"), answers)  # type: ignore[arg-type]
    verdict = await run_sample(config, post, pool, gold_evidence=loaded.gold_evidence[post.id])
    assert verdict.label == "unproven" and verdict.evidence == [] and verdict.evidence_ids == []
    assert not any("14 March 2023" in call.prompt for client in clients.values() for call in client.calls)


def test_every_configuration_loads_without_a_warning() -> None:
    names = ["agentfact", "agentfact-code", "agentfact-closed", "agentfact-bounded", "agentfact-no-sp", "agentfact-no-ir",
             "agentfact-no-tr", "agentfact-no-rt"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = [load_config(n) for n in names]
    assert [c.strategy for c in loaded] == ["agentfact"] * 8
