"""AgentFact on a vision backend, end to end on loopback: an OpenAI-compatible model server that records every
request, the search providers in their own formats (Google Cloud Vision, Serper) and a page server that
also serves the matched images. The post's image reaches the strategist, the reasoning agents and
Agent-IR; Agent-IR downloads the matched images through the fetch guards, sends them with the post's
image to the model to be grouped, drops the pages the model finds unrelated, scores tampering against
the closest match and judges each kept page's miscaption from the page's text and the image."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from PIL import Image

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.sample import Sample
from retrieval import guards
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.page_server import MATCHED_SIZE
from tests.support.paths import REPO, shared_data
from tests.support.provider_server import ProviderServer
from tests.support.schema_stub import answer as schema_answer
from tests.support.schema_stub import fill, schema_of

POST_IMAGE = REPO / "tests" / "fixtures" / "datasets" / "AgentFact" / "RW_Post_dataset" / "post_images" / "split_data_1" / "1.jpg"
GROUPS = ["same_source", "no_close_relationship", "same_event", "same_event", "same_event"]


def task_of(request: dict[str, Any]) -> str:
    for message in request.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content if p.get("type") == "text")
        if "Task: agentfact/" in text:
            return text.split("Task: agentfact/", 1)[1].split()[0]
    return ""


def images_in(request: dict[str, Any]) -> list[tuple[int, int]]:
    """The sizes of the images a request carries, in order."""
    sizes = []
    for message in request.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                sizes.append(Image.open(io.BytesIO(base64.b64decode(data))).size)
    return sizes


def respond(request: dict[str, Any], number: int) -> tuple[int, dict[str, Any], float]:
    """Every agent's schema answered by the schema stub, except the image grouping (image 2 is unrelated) and
    the screening, which uses an item of its batch so that the reasoner follows."""
    task = task_of(request)
    if task == "image_grouping":
        count = len(images_in(request)) - 1
        grouped = [{"image": i + 1, "relationship": GROUPS[i % len(GROUPS)], "reason": "compared"} for i in range(count)]
        return 200, completion_body(json.dumps({"images": grouped})), 0.0
    schema = schema_of(request)
    if task == "screen" and schema is not None:
        digest = hashlib.sha256(json.dumps(request["messages"]).encode()).digest()
        return 200, completion_body(json.dumps(fill(schema, digest, fill_arrays=True))), 0.0
    return schema_answer(request, number)


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ProviderServer, StubOpenAIServer]]:
    shared_data("article-extraction-benchmark")
    shared_data("mr2-sample")
    with ProviderServer() as providers, StubOpenAIServer(respond) as model:
        for variable, value in providers.environment().items():
            monkeypatch.setenv(variable, value)
        yield providers, model


async def test_an_image_post_reaches_the_strategist_and_agent_ir_with_the_matched_images(
    servers: tuple[ProviderServer, StubOpenAIServer], tmp_path: Path
) -> None:
    providers, model = servers
    settings = BackendSettings(backend="vision", backends={"vision": BackendConfig(
        kind="vllm", base_url=model.base_url, model="test-model", vision=True, cache=False, transport_retries=0)})
    config = load_config("agentfact")
    assert config.retrieval is not None
    quiet = config.retrieval.model_copy(update={"judge_unknown_domains": False,
                                                "summary": config.retrieval.summary.model_copy(update={"enabled": False})})
    config = with_overrides(config, retrieval=quiet, max_steps=2, max_plans=1)
    post = Sample(id="bridge", text="Claim: The new footbridge collapsed on its opening day.\nPost: It fell this morning!",
                  images=[POST_IMAGE])
    guards.allow_loopback_in_tests(True)
    try:
        async with RunSession(config, settings, retrieval="live", evidence_store=tmp_path / "evidence.sqlite") as session:
            verdict = await session.run(post)
    finally:
        guards.allow_loopback_in_tests(False)

    by_task: dict[str, list[dict[str, Any]]] = {}
    for request in model.requests:
        by_task.setdefault(task_of(request), []).append(request)
    post_size = Image.open(POST_IMAGE).size
    for task in ("strategy", "image_grouping", "tampering", "miscaption", "reason", "screen", "explain"):
        assert task in by_task, f"no {task} request in {sorted(by_task)}"
    for task in ("strategy", "miscaption", "screen", "reason", "explain"):
        assert all(images_in(r) == [post_size] for r in by_task[task]), f"the {task} request carries the post's image"

    diagnostics = verdict.diagnostics
    findings = [f.summary for f in verdict.findings]
    kept = [f for f in findings if f.startswith("[I")]
    pages = len(kept) + len(diagnostics.unrelated_images)
    assert pages >= 3, "the reverse image search's pages that passed the leakage filter"
    grouping = by_task["image_grouping"]
    assert len(grouping) == 1
    downloaded = [r for r in providers.requests if r["path"].endswith(".jpg")]
    assert len(downloaded) == pages, "Agent-IR downloaded each page's matched image from the page server"
    assert images_in(grouping[0]) == [post_size] + [MATCHED_SIZE] * pages, "the post's image, then every matched image"
    assert images_in(by_task["tampering"][0]) == [post_size, MATCHED_SIZE], "tampering: the post's image against its closest match"
    assert len(diagnostics.unrelated_images) == 1, "the page the model found unrelated is dropped"
    assert "relationship=same_source (compared)" in kept[0]
    assert kept[0].split("tampering=")[1].split(",")[0].isdigit(), "the closest match carries the tampering probability"
    assert all("not compared (the closest match is I1)" in line for line in kept[1:])
    assert all("(text only)" not in line for line in kept), "the miscaption judge saw the image"
    assert not any(what.startswith(("image_matching", "tampering", "miscaption_image", "post_image")) for what in diagnostics.unavailable)
    assert any(f.startswith("[post image] tampering probability") for f in findings)


def test_a_text_only_backend_lists_agent_irs_missing_steps_as_departures_and_a_vision_one_does_not() -> None:
    from debates.eval.score.departures import PlannedRun, planned_departures

    config = load_config("agentfact")
    text_only = BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", model="m", vision=False)
    seeing = text_only.with_overrides(vision=True)
    env = {"SERPER_API_KEY": "k", "GOOGLE_VISION_API_KEY": "k"}
    blind = {d.id for d in planned_departures(PlannedRun(config=config, backend_name="m", backend=text_only, env=env))}
    assert {"no-image-matching", "no-tamper-score", "miscaption-without-image", "text-only-backend"} <= blind
    assert "no-weights-learned-detector" in blind, "the deepfake score's slot has no weights"
    sighted = {d.id for d in planned_departures(PlannedRun(config=config, backend_name="m", backend=seeing, env=env))}
    assert not sighted & {"no-image-matching", "no-tamper-score", "miscaption-without-image", "text-only-backend"}
    weighted = PlannedRun(config=config, backend_name="m", backend=seeing, env={**env, "M3D_FORGERY_MODEL": "/weights/dire.pt"})
    assert "no-weights-learned-detector" not in {d.id for d in planned_departures(weighted)}
    for gone in ("stops-at-four", "screener-can-end", "retrieval-counts-as-steps", "two-search-engines", "explainer-sees-two",
                 "undated-pages-pass", "miscaption-from-summary", "no-image-to-models"):
        assert gone not in blind, f"{gone} is fixed in agentfact"
    code = {d.id for d in load_config("agentfact-code").departures}
    assert {"stops-at-four", "screener-can-end", "reasoner-skips-first-growth", "retrieval-counts-as-steps"} <= code
    assert "dire-slot-empty" in blind and "dire-weights-unchecked" not in blind, "the empty DIRE slot is the YAML's own"
    assert {"dire-weights-unchecked"} <= {d.id for d in planned_departures(weighted)} and "uncompared-pages-kept" in sighted
    assert "uncompared-pages-kept" not in blind


def test_agent_irs_departures_follow_the_visual_analysts_own_backend() -> None:
    """The text-only departures describe Agent-IR's seat: a vision seat on a text-only run has none of them, a text-only
    seat on a vision run has them all; ``--backend`` puts every seat on its backend."""
    from debates.config_loader import parse_config
    from debates.eval.score.departures import PlannedRun, planned_departures

    base = BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", model="m")
    backends = {"blind": base.with_overrides(vision=False), "seeing": base.with_overrides(vision=True)}
    env = {"SERPER_API_KEY": "k", "GOOGLE_VISION_API_KEY": "k"}
    agent_ir = {"no-image-matching", "no-tamper-score", "miscaption-without-image"}

    def planned(analyst: str, agents: str, overridden: bool = False) -> set[str]:
        data = load_config("agentfact").model_dump(exclude_none=True)
        data["seats"] = [{**seat, "backend": analyst} if seat["role"] == "visual_analyst" else seat for seat in data["seats"]]
        run = PlannedRun(config=parse_config(data, "agentfact.yaml"), backend_name=agents, backend=backends[agents], env=env,
                         lookup=backends.__getitem__, overridden=overridden)
        return {d.id for d in planned_departures(run)}

    sighted_analyst = planned("seeing", "blind")
    assert not sighted_analyst & agent_ir and "uncompared-pages-kept" in sighted_analyst
    assert "text-only-backend" in sighted_analyst, "the other agents still read no image"
    blind_analyst = planned("blind", "seeing")
    assert agent_ir <= blind_analyst and "uncompared-pages-kept" not in blind_analyst
    assert not planned("blind", "seeing", overridden=True) & agent_ir, "--backend seeing puts the analyst there too"
