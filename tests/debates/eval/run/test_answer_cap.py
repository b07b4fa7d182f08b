"""The answer cap: no cap of ours unless a backend or configuration sets one, the cap a run meets listed as a
departure of a paper configuration, and every answer the model stopped at its cap counted and shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from debates.config_loader import load_config
from debates.eval.records import row_from_verdict
from debates.eval.run.evaluate import run_costs_line
from debates.eval.score.departures import PlannedRun, planned_departures
from debates.eval.score.metrics import compute_metrics
from debates.session import run_sample
from m3d_agents.backends.config import BackendConfig, load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.selector_script import stub_answer

POST = Sample(id="p1", text="Storm clouds over the statue during the hurricane.", images=[EXAMPLE_IMAGE], taxonomy="m3d",
              gold_label="original")


def cut_first(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], float]:
    """The first step's answer ends at the cap (the text step's), the others finish."""
    reply = completion_body(stub_answer(body))
    if "whether its TEXT is true" in str(body["messages"][-1]):
        reply["choices"][0]["finish_reason"] = "length"
    return 200, reply, 0.0


async def run(tmp_path: Path, cap: str) -> tuple[list[dict[str, Any]], Any]:
    with StubOpenAIServer(cut_first) as server:
        path = tmp_path / "m3d.yaml"
        path.write_text(f"backend: vlm\nbackends:\n  vlm: {{kind: vllm, model: m, base_url: '{server.base_url}', "
                        f"vision: true, cache: false{cap}}}\n")
        pool = BackendPool(load_backend_settings(path))
        try:
            verdict = await run_sample("mmd-agent", POST, pool)
        finally:
            await pool.close()
        return list(server.requests), verdict


async def test_a_paper_configuration_sends_no_cap_and_a_cut_answer_is_counted_and_shown(tmp_path: Path) -> None:
    requests, verdict = await run(tmp_path, "")
    assert requests and not any("max_tokens" in body for body in requests), "no cap of ours: the paper sets none"
    assert verdict.accounting.cut_answers == 1 and verdict.accounting.by_role["text"].cut_answers == 1
    row = row_from_verdict(verdict, index=0, seed=0, gold="original", gold_mis=False, latency_s=0.1, cost_usd=None,
                           config="mmd-agent", backend="vlm")
    assert row.cut_answers == 1
    assert "answers cut at the token cap: 1;" in run_costs_line([row])
    metrics = compute_metrics([row], "m3d")
    assert (metrics.cut_answers, metrics.model_calls) == (1, verdict.accounting.model_calls)


async def test_a_backend_cap_reaches_every_request(tmp_path: Path) -> None:
    requests, _ = await run(tmp_path, ", max_tokens: 300")
    assert requests and all(body["max_tokens"] == 300 for body in requests)


def test_the_cap_a_run_meets_is_a_departure_of_a_paper_configuration() -> None:
    def cap(config: str, backend: BackendConfig) -> str | None:
        found = {d.id: d.text for d in planned_departures(PlannedRun(load_config(config), "b", backend, env={}))}
        return found.get("answer-cap")

    vllm = BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1")
    assert cap("t2agent", vllm) is None and cap("disambiguation", vllm) is None, "no cap: the papers set none"
    assert cap("factguard", vllm) is None, "FactGuard's 768 tokens are the paper's"
    local = cap("t2agent", BackendConfig(kind="local"))
    assert local is not None and "at 256 tokens (the embedded model's own cap, local.answer_tokens)" in local
    assert "T2Agent's setting sets no limit" in local
    capped = cap("disambiguation", vllm.model_copy(update={"max_tokens": 512}))
    assert capped is not None and "at 512 tokens (its max_tokens)" in capped
    assert cap("factguard", vllm.model_copy(update={"max_tokens": 512})) is None, "a configuration's own cap wins"
    lowered = cap("factguard", BackendConfig(kind="local"))
    assert lowered is not None and "at 256 tokens" in lowered and "allows 768" in lowered
    assert cap("check", BackendConfig(kind="local")) is None, "a configuration of ours has no paper to depart from"
