"""Debate configurations driven by scripted model clients: turn order, visibility, termination, voting."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.debate_engine.config import DebateConfig
from debates.config_loader import load_config
from debates.session import run_sample
from debates.debate_engine.human_input import QueueInput
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from tests.support.debate import SAMPLE, answer, prompts_of, seat_pool
from tests.support.scripted import ScriptedClient, text_of

async def test_async_turn_order_and_consensus_after_first_round() -> None:
    config, pool, clients = seat_pool(
        load_config("async-three"), {n: [answer("fake")] for n in ("agent_a", "agent_b", "agent_c")}
    )
    verdict = await run_sample(config, SAMPLE, pool)
    assert [t.speaker for t in verdict.transcript] == ["agent_a", "agent_b", "agent_c"]
    assert verdict.label == "fake" and verdict.is_misinformation
    assert verdict.diagnostics.consensus_round == 1
    assert verdict.diagnostics.decided_by == "consensus"
    assert verdict.accounting.model_calls == 3
    assert verdict.confidence == 1.0


async def test_async_first_round_is_independent_then_agents_see_latest_answers() -> None:
    scripts = {
        "agent_a": [answer("fake", "A-ONE"), answer("fake", "A-TWO")],
        "agent_b": [answer("real", "B-ONE"), answer("fake", "B-TWO")],
        "agent_c": [answer("real", "C-ONE"), answer("fake", "C-TWO")],
    }
    config, pool, clients = seat_pool(load_config("async-three"), scripts)
    verdict = await run_sample(config, SAMPLE, pool)
    b_round1, c_round1 = prompts_of(clients["agent_b"])[0], prompts_of(clients["agent_c"])[0]
    assert "A-ONE" not in b_round1 and "A-ONE" not in c_round1 and "B-ONE" not in c_round1
    a_round2 = prompts_of(clients["agent_a"])[1]
    assert "B-ONE" in a_round2 and "C-ONE" in a_round2 and "A-ONE" in a_round2
    b_round2 = prompts_of(clients["agent_b"])[1]
    assert "A-TWO" in b_round2, "async: agent_b sees agent_a's answer from this round"
    assert [t.speaker for t in verdict.transcript] == ["agent_a", "agent_b", "agent_c"] * 2
    assert verdict.diagnostics.consensus_round == 2
    assert verdict.diagnostics.answer_changes == {"agent_a": 0, "agent_b": 1, "agent_c": 1}
    assert verdict.diagnostics.first_round_majority == "real"
    assert verdict.diagnostics.overturned_first_round_majority is True


async def test_prompts_tell_agents_they_debate_a_human_or_an_ai() -> None:
    for name, phrase in (("async-three", "discussing this post with a person"), ("async-ai-three", "with another AI model")):
        config, pool, clients = seat_pool(load_config(name), {n: [answer("fake")] for n in ("agent_a", "agent_b", "agent_c")})
        await run_sample(config, SAMPLE, pool)
        assert phrase in prompts_of(clients["agent_a"])[0]


async def test_sync_rounds_are_concurrent_and_see_only_the_previous_round() -> None:
    scripts = {
        "agent_a": [answer("fake", "A-ONE"), answer("fake", "A-TWO"), answer("fake", "A-3")],
        "agent_b": [answer("real", "B-ONE"), answer("real", "B-TWO"), answer("real", "B-3")],
        "agent_c": [answer("real", "C-ONE"), answer("fake", "C-TWO"), answer("fake", "C-3")],
    }
    config, pool, clients = seat_pool(load_config("sync-three"), scripts, delay_s=0.2)
    verdict = await run_sample(config, SAMPLE, pool)
    firsts = [clients[n].calls[0] for n in ("agent_a", "agent_b", "agent_c")]
    assert max(c.started for c in firsts) < min(c.finished for c in firsts), "round 1 calls overlap"
    a_round2 = prompts_of(clients["agent_a"])[1]
    assert "B-ONE" in a_round2 and "C-ONE" in a_round2
    a_round3 = prompts_of(clients["agent_a"])[2]
    assert "B-TWO" in a_round3 and "B-ONE" not in a_round3
    assert verdict.diagnostics.rounds == 3
    assert "maximum of 3 rounds" in verdict.diagnostics.stop_reason
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "majority"
    assert verdict.confidence == pytest.approx(2 / 3, abs=1e-3)


async def test_tie_without_consensus_abstains() -> None:
    config = load_config("async-three").model_copy(update={"max_rounds": 2})
    config.seats = config.seats[:2]
    config, pool, _ = seat_pool(config, {"agent_a": [answer("fake")] * 2, "agent_b": [answer("real")] * 2})
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.abstain_reason == "no consensus and no majority: agent_a answered fake and agent_b answered real"
    assert len(verdict.transcript) == 4


async def test_unreadable_answers_are_retried_then_count_as_abstentions() -> None:
    scripts = {
        "agent_a": ["hmm"] * 3,
        "agent_b": [answer("fake")],
        "agent_c": [answer("fake")],
    }
    config = load_config("async-three").model_copy(update={"max_rounds": 1})
    config, pool, clients = seat_pool(config, scripts)
    verdict = await run_sample(config, SAMPLE, pool)
    assert len(clients["agent_a"].calls) == 3
    assert verdict.accounting.parse_retries == 2
    assert verdict.transcript[0].stance is None and verdict.transcript[0].parse_error
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "majority"


async def test_judged_debate_judge_never_sees_the_evidence() -> None:
    evidence = [Evidence(kind="web_page", url="https://example.org/a", text="SECRET-EVIDENCE the photo is a composite")]
    scripts = {
        "prosecutor": ["PROS-1 the evidence shows a composite", "PROS-2 still a composite"],
        "defender": ["DEF-1 it is a real storm", "DEF-2 real"],
        "judge": [answer("fake", "JUDGE", confidence=0.9)],
    }
    config, pool, clients = seat_pool(load_config("judged"), scripts)
    verdict = await run_sample(config, SAMPLE, pool, evidence=evidence)
    assert [t.speaker for t in verdict.transcript] == ["prosecutor", "defender", "prosecutor", "defender", "judge"]
    judge_prompt = prompts_of(clients["judge"])[0]
    assert "SECRET-EVIDENCE" not in judge_prompt
    assert "PROS-1" in judge_prompt and "DEF-2" in judge_prompt
    assert all("SECRET-EVIDENCE" in p for p in prompts_of(clients["prosecutor"]))
    assert "IS misinformation" in prompts_of(clients["prosecutor"])[0]
    assert "NOT misinformation" in prompts_of(clients["defender"])[0]
    assert "PROS-1" not in prompts_of(clients["defender"])[0], "opening statements are independent"
    assert verdict.label == "fake" and verdict.confidence == 0.9
    assert verdict.diagnostics.decided_by == "judge"
    assert verdict.evidence_ids == [evidence[0].id]


async def test_judge_sees_no_image_even_on_a_vision_backend() -> None:
    from autogen_core import Image as AgentImage

    scripts = {"prosecutor": ["p1", "p2"], "defender": ["d1", "d2"], "judge": [answer("real")]}
    config, pool, clients = seat_pool(load_config("judged"), scripts, vision=True)
    await run_sample(config, SAMPLE, pool)

    def has_image(client: ScriptedClient) -> bool:
        return any(isinstance(part, AgentImage) for m in client.calls[0].messages
                   for part in (m.content if isinstance(m.content, list) else []))

    assert has_image(clients["prosecutor"]) and not has_image(clients["judge"])


async def test_actor_skeptic_order_and_only_the_actor_counts() -> None:
    scripts = {
        "actor": [answer("real", "ACT-1"), answer("fake", "ACT-2"), answer("fake", "ACT-3")],
        "skeptic": ["Why trust the lighting? FINAL ANSWER: real", "What about the date? FINAL ANSWER: real"],
    }
    config, pool, clients = seat_pool(load_config("actor-skeptic"), scripts)
    verdict = await run_sample(config, SAMPLE, pool)
    assert [t.speaker for t in verdict.transcript] == ["actor", "skeptic", "actor", "skeptic", "actor"]
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "actor"
    assert "ACT-1" in prompts_of(clients["skeptic"])[0]
    assert "Why trust the lighting?" in prompts_of(clients["actor"])[1]


async def test_actor_skeptic_stops_when_the_skeptic_has_no_objections() -> None:
    config, pool, _ = seat_pool(load_config("actor-skeptic"), {"actor": [answer("real")], "skeptic": ["NO OBJECTIONS"]})
    verdict = await run_sample(config, SAMPLE, pool)
    assert [t.speaker for t in verdict.transcript] == ["actor", "skeptic"]
    assert verdict.label == "real"
    assert "no objections" in verdict.diagnostics.stop_reason


class DictAnswerer:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        self.asked.append(query)
        return [Evidence(kind="corpus", text=f"ANSWER-TO[{query}]: photo by Nick Hall, 2011, a composite")]


async def test_disambiguation_queries_are_answered_into_the_next_round() -> None:
    scripts = {
        "agent_a": [answer("real", "A1") + "\nQUERY: who took the Statue of Liberty storm photo", answer("fake", "A2")],
        "agent_b": [answer("fake", "B1"), answer("fake", "B2")],
        "agent_c": [answer("fake", "C1"), answer("fake", "C2")],
    }
    answerer = DictAnswerer()
    config, pool, clients = seat_pool(load_config("disambiguation-three"), scripts)
    verdict = await run_sample(config, SAMPLE, pool, query_answerer=answerer)
    assert answerer.asked == ["who took the Statue of Liberty storm photo"]
    speakers = [t.speaker for t in verdict.transcript]
    assert speakers.index("retrieval_desk") == 3 and len(speakers) == 7
    for name in ("agent_a", "agent_b", "agent_c"):
        assert "ANSWER-TO[who took" in prompts_of(clients[name])[1]
        assert "ANSWER-TO[" not in prompts_of(clients[name])[0]
    assert verdict.label == "fake" and verdict.diagnostics.queries_answered == 1
    assert len(verdict.evidence_ids) == 1


async def test_a_human_takes_a_debater_seat_and_is_parsed_like_an_agent() -> None:
    scripts = {"agent_a": [answer("fake", "A1"), answer("fake", "A2")], "agent_c": [answer("real", "C1"), answer("real", "C2")]}
    config, pool, _ = seat_pool(load_config("async-three").model_copy(update={"max_rounds": 2}), scripts)
    person = QueueInput()
    person.put("I am not sure yet")
    person.put("The storm photo is a well-known composite. FINAL ANSWER: real")
    person.put("Fine, I agree because the original has no clouds. FINAL ANSWER: real")
    verdict = await run_sample(config, SAMPLE, pool, human_seats={"agent_b": person})
    shown = [person.prompts.get_nowait() for _ in range(person.prompts.qsize())]
    assert "A1" not in shown[0], "the human's first round is independent too"
    assert "could not be read" in shown[1]
    assert "A2" in shown[2] and "C1" in shown[2]
    human_turns = [t for t in verdict.transcript if t.speaker == "agent_b"]
    assert [t.stance for t in human_turns] == ["real", "real"]
    assert verdict.label == "real"
    assert verdict.accounting.by_agent.keys() == {"agent_a", "agent_c"}


async def test_a_human_can_be_the_judge_with_a_sync_input_function() -> None:
    seen: list[str] = []

    def person(prompt: str) -> str:
        seen.append(prompt)
        return "The defence answered every point. FINAL ANSWER: real"

    scripts = {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"]}
    config, pool, _ = seat_pool(load_config("judged"), scripts)
    verdict = await run_sample(config, SAMPLE, pool, human_seats={"judge": person},
                               evidence=[Evidence(kind="web_page", text="SECRET-EVIDENCE")])
    assert verdict.label == "real" and verdict.diagnostics.decided_by == "judge"
    assert "P2" in seen[0] and "D2" in seen[0] and "SECRET-EVIDENCE" not in seen[0]


async def test_no_history_leaks_between_samples() -> None:
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        return answer("fake", "FIRST-SAMPLE-ANSWER" if "Statue" in text_of(messages) else "SECOND")

    config, pool, clients = seat_pool(load_config("async-three"), {n: respond for n in ("agent_a", "agent_b", "agent_c")})
    await run_sample(config, SAMPLE, pool)
    n_before = {n: len(c.calls) for n, c in clients.items()}
    second = await run_sample(config, Sample(text="A flood in a city centre, 2024"), pool)
    for name, client in clients.items():
        for call in client.calls[n_before[name]:]:
            assert "FIRST-SAMPLE-ANSWER" not in call.prompt and "Statue" not in call.prompt
    assert [t.round for t in second.transcript] == [1, 1, 1]


async def test_mixed_backends_per_seat_and_judge_rule_without_consensus() -> None:
    config = load_config("async-three").model_copy(update={"on_no_consensus": "judge", "max_rounds": 1})
    config.seats = [*config.seats, config.seats[0].model_copy(update={"name": "referee", "role": "judge"})]
    scripts = {"agent_a": [answer("fake")], "agent_b": [answer("real")], "agent_c": [answer("real")],
               "referee": [answer("fake", confidence=0.6)]}
    config, pool, clients = seat_pool(config, scripts)
    verdict = await run_sample(config, SAMPLE, pool)
    assert all(len(clients[n].calls) == 1 for n in scripts)
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "judge"
    assert verdict.backend == "b_agent_a,b_agent_b,b_agent_c,b_referee"


async def test_streaming_callback_sees_each_turn() -> None:
    config, pool, _ = seat_pool(load_config("async-three"), {n: [answer("fake")] for n in ("agent_a", "agent_b", "agent_c")})
    streamed: list[str] = []

    async def on_message(message: Any, state: Any) -> None:
        streamed.append(getattr(message, "source", ""))

    await run_sample(config, SAMPLE, pool, on_message=on_message)
    assert [s for s in streamed if s.startswith("agent_")] == ["agent_a", "agent_b", "agent_c"]


def test_config_validation_names_the_problem() -> None:
    from m3d_agents.errors import InputError

    with pytest.raises(InputError, match="no configuration 'nope'"):
        load_config("nope")
    base = load_config("judged").model_dump()
    base["seats"][0]["stance"] = None
    with pytest.raises(ValueError, match="assigned stance"):
        DebateConfig.model_validate(base)


async def test_schema_capable_backends_get_json_turns_rendered_as_prose() -> None:
    import json

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        schema = kwargs["response_format"]["schema"]
        assert schema["properties"]["answer"]["enum"] == ["real", "fake"]
        return json.dumps({"argument": "The clouds are pasted in.", "answer": "fake", "confidence": 0.8})

    three = load_config("async-three").model_copy(update={"structured_turns": True})
    config, pool, clients = seat_pool(three, {n: respond for n in ("agent_a", "agent_b", "agent_c")},
                                      json_output=True)
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.label == "fake" and verdict.accounting.model_calls == 3
    assert verdict.transcript[0].text == "The clouds are pasted in.\nFINAL ANSWER: fake\nCONFIDENCE: 0.8"
    assert "JSON object" in prompts_of(clients["agent_a"])[0]


async def test_json_turns_carry_disambiguation_queries() -> None:
    import json

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        assert "queries" in kwargs["response_format"]["schema"]["properties"]
        return json.dumps({"argument": "Unsure.", "queries": ["statue of liberty storm photo origin"],
                           "answer": "fake", "confidence": 0.5})

    config = load_config("disambiguation-three").model_copy(update={"max_rounds": 1, "structured_turns": True})
    config, pool, _ = seat_pool(config, {n: respond for n in ("agent_a", "agent_b", "agent_c")}, json_output=True)
    verdict = await run_sample(config, SAMPLE, pool, query_answerer=DictAnswerer())
    assert "QUERY: statue of liberty storm photo origin" in verdict.transcript[0].text


def test_json_turn_with_an_out_of_range_confidence_keeps_its_label_and_drops_the_confidence() -> None:
    from debates.debate_engine.structured_turns import read_structured, turn_schema
    from m3d_agents.errors import ParseError
    from m3d_agents.labels import get_taxonomy

    binary = get_taxonomy("binary")
    schema = turn_schema(("real", "fake"), False)
    reading = read_structured('{"argument": "x", "answer": "fake", "confidence": 10}', schema, binary, 2)
    assert reading.label == "fake" and reading.confidence is None
    assert reading.rendered == "x\nFINAL ANSWER: fake"
    with pytest.raises(ParseError):
        read_structured('{"argument": "x", "answer": "maybe", "confidence": 0.5}', schema, binary, 2)


async def test_a_judged_debaters_turn_without_an_answer_line_is_no_parse_error() -> None:
    config, pool, _ = seat_pool(load_config("judged"), {"prosecutor": ["P1", "P2"], "defender": ["D1", "D2"],
                                                        "judge": [answer("fake", confidence=0.9)]})
    verdict = await run_sample(config, SAMPLE, pool)
    debaters = [t for t in verdict.transcript if t.role == "debater"]
    assert len(debaters) == 4 and all(t.parse_error is None for t in debaters)


def test_a_confidence_is_given_to_four_places() -> None:
    """Products and means of stated confidences (0.9750000000000001) reach the verdict rounded, for every strategy."""
    from debates.strategy import RunContext
    from m3d_agents.backends.factory import BackendPool

    verdict = RunContext(pool=BackendPool()).verdict(SAMPLE, load_config("async"), backend="b", label="fake",
                                                     confidence=0.9750000000000001)
    assert verdict.confidence == 0.975
