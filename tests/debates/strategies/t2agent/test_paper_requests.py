"""What the paper's search sends, read off the wire of two loopback OpenAI-compatible servers: every step and
every score request of ``t2agent`` carries the image, and Detect and entity recognition, given a backend of their
own (as the paper runs LLaVA-34B and Baidu's recogniser apart from the agent), send their requests there, with the
image and without the post's caption."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from debates.config_loader import load_config
from debates.eval.score.departures import PlannedRun, planned_departures
from debates.session import run_sample
from m3d_agents.backends.config import load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import EXAMPLE_IMAGE

CAPTION = "The mayor opened the new bridge in Alphaville on Monday."
POST = Sample(id="post-1", text=CAPTION, images=[EXAMPLE_IMAGE], taxonomy="m3d")


def texts(body: dict[str, Any]) -> str:
    parts = []
    for message in body["messages"]:
        content = message["content"]
        parts += [content] if isinstance(content, str) else [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(parts)


def images(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p.get("type") == "image_url")


def agent(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    """Every check's first step calls its image tool (Detect, Entity) or a search; then it finds its part real."""
    prompt = texts(body)
    if "The likelihoods are" in prompt:
        return 200, completion_body("A glance. The likelihoods are [0.2, 0.5, 0.4]"), 0.0
    if "correctness score is" in prompt:
        return 200, completion_body("The steps hold up. The correctness score is 7"), 0.0
    if "reliability score is" in prompt:
        return 200, completion_body("It follows from the observations. The reliability score is 9"), 0.0
    menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
    if menu is None:
        return tool_model(body, _n)
    fake, real = menu.groups()
    first = {"IMAGE REFUTE": "Detect[image]", "MISMATCH": "Entity[image]", "TEXT REFUTE": "Wikipedia[Alphaville]"}[fake]
    if "Write step 1 now" in prompt:
        return 200, completion_body(f"Thought 1: Use the tool first.\nAction 1: {first}"), 0.0
    return 200, completion_body(f"Thought 2: The tool found nothing wrong.\nAction 2: Finish[{real}]"), 0.0


def tool_model(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    prompt = texts(body)
    if "named entities" in prompt:
        return 200, completion_body('{"entities": [{"name": "a bridge", "type": "landmark", "evidence": "centre"}]}'), 0.0
    return 200, completion_body('{"plausible": true, "problems": [], "rationale": "light and shadows agree"}'), 0.0


def settings(tmp_path: Path, first: str, second: str, tools: bool) -> Path:
    path = tmp_path / "m3d.yaml"
    path.write_text(
        "backend: agent\nbackends:\n"
        f"  agent: {{kind: vllm, model: agent-model, base_url: '{first}', vision: true, cache: false}}\n"
        f"  llava: {{kind: vllm, model: llava-model, base_url: '{second}', vision: true, cache: false}}\n"
        + ("tools:\n  physics_check: {backend: llava}\n  image_entities: {backend: llava}\n" if tools else "")
    )
    return path


class Pages:
    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Any]:
        return []


class Snippets:
    """A Wikipedia searcher answering one snippet from a domain no list rates."""

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Any]:
        from m3d_agents.evidence import Evidence

        return [Evidence(kind="wikipedia", url="https://obscure-wiki.example/Alphaville", domain="obscure-wiki.example",
                         text="SNIPPET Alphaville opened a bridge in May.")]


async def run(tmp_path: Path, tools: bool, pages: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    with StubOpenAIServer(agent) as first, StubOpenAIServer(tool_model) as second:
        pool = BackendPool(load_backend_settings(settings(tmp_path, first.base_url, second.base_url, tools)))
        try:
            verdict = await run_sample("t2agent", POST, pool, searchers={"wikipedia": pages or Pages()})
        finally:
            await pool.close()
        return list(first.requests), list(second.requests), verdict


async def test_every_step_and_score_request_of_the_papers_search_carries_the_image(tmp_path: Path) -> None:
    agent_requests, _, verdict = await run(tmp_path, tools=True)
    steps = [b for b in agent_requests if "Actions you may take" in texts(b)]
    trajectory = [b for b in agent_requests if "correctness score is" in texts(b)]
    confidence = [b for b in agent_requests if "reliability score is" in texts(b)]
    assert {"Finish[TEXT REFUTE]", "Finish[IMAGE REFUTE]", "Finish[MISMATCH]"} <= {
        m for b in steps for m in re.findall(r"Finish\[[A-Z ]+\]", texts(b))}, "all three checks took steps"
    assert steps and trajectory and confidence
    assert all(images(b) == 1 for b in steps + trajectory + confidence), "steps, S_T and S_C all see the image"
    assert all("in detail" in texts(b) for b in trajectory), "S_T asks for the paper's detailed analysis"
    assert verdict.label == "original" and verdict.diagnostics.search.k == 4


async def test_detect_and_entity_go_to_their_own_backend_with_the_image_and_without_the_caption(tmp_path: Path) -> None:
    agent_requests, tool_requests, verdict = await run(tmp_path, tools=True)
    detect = [b for b in tool_requests if "Look at the attached image alone" in texts(b)]
    entity = [b for b in tool_requests if "named entities" in texts(b)]
    assert detect and entity and len(detect) + len(entity) == len(tool_requests)
    assert all(b["model"] == "llava-model" and images(b) == 1 for b in tool_requests)
    assert not any(CAPTION in texts(b) or "Alphaville" in texts(b) for b in tool_requests), "the tools never see the caption"
    assert not any("Look at the attached image alone" in texts(b) or "named entities" in texts(b) for b in agent_requests)
    usage = verdict.accounting
    assert usage.by_role["physics_check"].calls == len(detect) and usage.by_role["image_entities"].calls == len(entity)
    assert usage.by_backend["llava"].calls == len(tool_requests)


async def test_without_their_own_backend_the_tools_run_on_the_agents_model_and_the_run_says_so(tmp_path: Path) -> None:
    agent_requests, tool_requests, _ = await run(tmp_path, tools=False)
    assert not tool_requests and any("Look at the attached image alone" in texts(b) for b in agent_requests)
    config = load_config("t2agent")
    plain = load_backend_settings(settings(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", tools=False))
    given = load_backend_settings(settings(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1", tools=True))

    def ids(backends: Any) -> set[str]:
        plan = PlannedRun(config=config, backend_name="agent", backend=backends.backends["agent"], file_tools=backends.tools,
                          env={})
        return {d.id for d in planned_departures(plan)}

    assert {"own-model-physics-check", "own-model-image-entities"} <= ids(plain)
    assert not {"own-model-physics-check", "own-model-image-entities"} & ids(given)
    assert "revisit-after-sweep" in ids(plain) and "leakage-filter" not in ids(plain), "the paper filters nothing"


async def test_the_papers_search_results_reach_the_agent_as_snippets_without_a_reliability_rating(tmp_path: Path) -> None:
    """Paper line 307: Google and Wikipedia return the snippet; t2agent rates no source, so no judgement call is made."""
    agent_requests, _, verdict = await run(tmp_path, tools=True, pages=Snippets())
    later = [texts(b) for b in agent_requests if "SNIPPET Alphaville" in texts(b)]
    assert later, "the observation reached the next step and the scores"
    assert not any("reliability:" in t for t in later)
    assert "reliability" not in verdict.accounting.by_role
