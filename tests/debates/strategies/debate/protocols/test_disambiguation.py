"""The disambiguation protocol on hand-built state: queries go to the retrieval desk between rounds."""

from __future__ import annotations

from debates.debate_engine.desk import RetrievalDesk
from debates.debate_engine.state import DESK_NAME
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.sample import Sample
from tests.support.protocols import debate, says, seen, view_of


def test_the_desk_answers_after_a_round_in_which_someone_asked() -> None:
    state = debate("disambiguation-three", ("agent_a", "QUERY: where was it taken?\n" + says("fake")),
                   ("agent_b", says("real")), ("agent_c", says("real")))
    assert state.pending_queries() == [("agent_a", "where was it taken?")]
    assert state.protocol.next_speakers(state) == [DESK_NAME]
    state.record(DESK_NAME, "QUERY: where was it taken?\nNothing relevant was found.")
    assert state.protocol.next_speakers(state) == ["agent_a", "agent_b", "agent_c"]


def test_the_next_round_sees_the_desk_answers_and_the_previous_round() -> None:
    state = debate("disambiguation-three", ("agent_a", "QUERY: q\n" + says("fake")), ("agent_b", says("real")),
                   ("agent_c", says("real")), (DESK_NAME, "answers"))
    assert seen(view_of(state, "agent_b")) == [("agent_b", 1), ("agent_a", 1), ("agent_c", 1), (DESK_NAME, 1)]


def test_the_protocol_brings_a_retrieval_desk_and_asks_for_queries_in_json_turns() -> None:
    state = debate("disambiguation-three")
    extra = state.protocol.extra_participants(state, Sample(text="a claim"), UsageLedger(), None)
    assert [type(a) for a in extra] == [RetrievalDesk]
    assert state.protocol.structured_turn(state.config.seats[0], state.config) is True


def test_the_papers_disambiguation_takes_every_query_in_free_text_and_our_variant_caps_them_in_json() -> None:
    """LLM-Consensus lines 192, 199, 205: free text ending in a definite answer, questions without a number."""
    from debates.config_loader import available_configs, load_config
    from debates.debate_engine.config import DebateConfig
    from m3d_agents.labels import get_taxonomy

    three = "QUERY: where?\nQUERY: when?\nQUERY: who?\n" + says("fake")
    paper = debate("disambiguation", ("agent_a", three))
    assert [q for _, q in paper.pending_queries()] == ["where?", "when?", "who?"]
    system = paper.protocol.system_prompt(paper.config.seats[0], paper.config, get_taxonomy("ooc"))
    assert "QUERY:" in system and "at most" not in system
    assert not paper.config.structured_turns
    ours = debate("disambiguation-json", ("agent_a", three))
    assert [q for _, q in ours.pending_queries()] == ["where?", "when?"]
    assert ours.config.structured_turns and "Ask at most 2 queries per turn." in ours.protocol.system_prompt(
        ours.config.seats[0], ours.config, get_taxonomy("ooc"))
    consensus = [load_config(n) for n in available_configs() if load_config(n).paper == "LLM-Consensus"]
    assert len(consensus) >= 12
    for config in consensus:
        assert isinstance(config, DebateConfig)
        ids = {d.id for d in config.departures}
        if config.name == "disambiguation-json":
            assert config.structured_turns and {"json-turns", "query-cap"} <= ids
        else:
            assert not config.structured_turns and "answer-lines" in ids, config.name
