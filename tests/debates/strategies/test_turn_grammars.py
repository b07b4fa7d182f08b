"""What a request carries to constrain each free-text turn format, per kind of server: llama.cpp's ``grammar``
(with the embedded model's bounded prose and answer cap), vLLM's ``structured_outputs.grammar``, and nothing
for a server without grammars. The paper configurations keep their formats: the grammar only guarantees them."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from debates.session import run_sample
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.grammars import GRAMMAR_ARG
from m3d_agents.sample import Sample, VideoRef
from tests.support.openai_stub_server import StubOpenAIServer
from tests.support.paths import EXAMPLE_IMAGE, REPO
from tests.support.reproduce_script import scripted_table_server

VIDEO = REPO / "examples" / "video"
POST = Sample(text="Storm clouds over the Statue of Liberty during Hurricane Sandy", images=[EXAMPLE_IMAGE])
BOUNDED = 'prose ::= sentence (" " sentence){0,2}'


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with scripted_table_server() as stub:
        yield stub


def pool_for(server: StubOpenAIServer, kind: str) -> BackendPool:
    config = BackendConfig(kind=kind, base_url=server.base_url, model="scripted-model", cache=False, transport_retries=0,  # type: ignore[arg-type]
                           api_key_env="M3D_TEST_STUB_KEY")
    return BackendPool(BackendSettings(backend="stub", backends={"stub": config}))


async def bodies(server: StubOpenAIServer, kind: str, config: str, post: Sample = POST) -> list[dict[str, Any]]:
    pool = pool_for(server, kind)
    try:
        await run_sample(config, post, pool, backend="stub")
    finally:
        await pool.close()
    return list(server.requests)


def grammars(sent: list[dict[str, Any]]) -> list[str]:
    return [body["grammar"] for body in sent if "grammar" in body]


def video_post() -> Sample:
    return Sample(text=(VIDEO / "caption.txt").read_text().strip(),
                  video=VideoRef(path=VIDEO / "flood.mp4", transcript=(VIDEO / "transcript.txt").read_text().strip()))


async def test_debate_answer_lines_go_to_llama_cpp_as_a_grammar_with_bounded_prose(server: StubOpenAIServer) -> None:
    sent = await bodies(server, "local", "async")
    found = grammars(sent)
    assert found and all('"FINAL ANSWER: " label "\\n" "CONFIDENCE: " confidence' in g for g in found)
    assert all('label ::= "real" | "fake"' in g and BOUNDED in g for g in found)
    assert all(GRAMMAR_ARG not in body and "response_format" not in body for body in sent), \
        "on the embedded model a debate turn is the paper's text format under a grammar, not JSON"
    assert all(body["max_tokens"] <= 256 for body in sent), "the embedded model's answer cap"


async def test_a_judged_debater_argues_in_a_few_sentences_and_the_judge_answers(server: StubOpenAIServer) -> None:
    found = grammars(await bodies(server, "local", "judged"))
    assert found.count(f"root ::= prose\n{BOUNDED}\nsentence ::= [^\\n.!?<\\[ ] [^\\n.!?<\\[]* [.!?]\n") == 4
    judge = [g for g in found if "FINAL ANSWER: " in g]
    assert judge and len(found) == 4 + len(judge), "the judge's calls (a retry of a stub's unreadable answer too) carry its answer lines"


async def test_agentm3d_constrains_finish_lines_the_planner_tag_rewards_and_critics(server: StubOpenAIServer) -> None:
    found = grammars(await bodies(server, "local", "agentm3d"))
    assert any('"Finish[" action "]"' in g and '"TEXT REFUTE"' in g for g in found)
    assert any('root ::= "[BON level-" [01] "]"' in g for g in found)
    assert any('root ::= "SCORE:" score' in g or "root ::= score" in g for g in found)


async def test_the_tree_search_constrains_react_steps_finish_and_scores(server: StubOpenAIServer) -> None:
    found = grammars(await bodies(server, "local", "t2agent"))
    steps = [g for g in found if 'root ::= "Thought ' in g]
    assert steps and all('"Action ' in g and '"Finish[" (' in g for g in steps)
    assert any('"The correctness score is "' in g for g in found) and any('"The reliability score is "' in g for g in found)
    assert any('"The likelihoods are "' in g for g in found)


async def test_factguard_constrains_its_tags(server: StubOpenAIServer) -> None:
    found = grammars(await bodies(server, "local", "factguard", video_post()))
    assert found and all(g.startswith('root ::= "<think>" prose "</think>"') for g in found)
    assert any('"<tool_call>{\\"name\\": \\"" tool' in g for g in found)
    assert all('"<answer>" ("fake" | "real") "</answer>"' in g for g in found)


async def test_vllm_takes_the_grammar_in_structured_outputs_with_open_prose(server: StubOpenAIServer) -> None:
    sent = await bodies(server, "vllm", "judged")
    found = [body["structured_outputs"]["grammar"] for body in sent if "structured_outputs" in body]
    assert len(found) == 5 and all('prose ::= [^\\n]+ ("\\n"+ [^\\n]+)*' in g for g in found)
    assert sum('"FINAL ANSWER: " label' in g for g in found) == 1, "the judge answers in free text too, as the paper asks"
    assert all("grammar" not in body and GRAMMAR_ARG not in body for body in sent)


async def test_a_server_without_grammars_gets_the_request_it_got_before(server: StubOpenAIServer,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_TEST_STUB_KEY", "stub-key")
    sent = await bodies(server, "openai", "judged")
    assert sent and not any(key in body for body in sent for key in ("grammar", "structured_outputs", "guided_grammar", GRAMMAR_ARG))
    assert all("max_tokens" not in json.dumps(body) for body in sent), "no answer cap of ours: the paper sets none"
