"""Self-consistency: N independent checks with distinct seeds, the majority label, agreement as confidence."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from autogen_core.models import LLMMessage

from debates.strategy import STRATEGIES, derive_seed
from debates.config_loader import available_configs, load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample
from tests.support.scripted import ScriptedClient, scripted_backend


def answering(labels: Sequence[str | None]) -> Any:
    """A checker that answers labels[i] to check i, known by its seed (None: an unreadable answer).

    Check i of a sample with seed 0 asks with the seed the run context derives for ``("check", i)``."""
    by_seed = {derive_seed(0, "check", i): label for i, label in enumerate(labels)}

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        label = by_seed[int(kwargs["seed"])]
        if label is None:
            return "no idea"
        return json.dumps({"rationale": f"because {label}", "label": label, "confidence": 0.9})

    return respond


async def run(labels: Sequence[str | None], **settings: object) -> tuple[Any, ScriptedClient]:
    client = ScriptedClient(answering(labels), json_output=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = load_config("self-consistency").model_copy(update={"n": len(labels), **settings})
    verdict = await run_sample(config, Sample(text="Storm over the Statue of Liberty"), pool, backend="scripted")
    return verdict, client


async def test_majority_label_with_the_agreement_rate_as_confidence() -> None:
    verdict, client = await run(["fake", "fake", "real", "fake", None], parse_retries=0)
    assert verdict.label == "fake" and verdict.confidence == 0.6, "3 of all 5 checks agree; the unreadable one counts against"
    assert verdict.diagnostics.votes == {"fake": 3, "real": 1} and verdict.diagnostics.readable == 4
    seeds = [call.kwargs["seed"] for call in client.calls]
    assert len(seeds) == 5 and len(set(seeds)) == 5, "independent checks use distinct seeds"
    assert {call.kwargs["temperature"] for call in client.calls} == {0.7}
    assert verdict.accounting.model_calls == 5 and [t.speaker for t in verdict.transcript] == [f"check_{i}" for i in range(1, 6)]


async def test_a_tie_abstains() -> None:
    verdict, _ = await run(["fake", "real"], parse_retries=0)
    assert verdict.abstained and "no majority" in (verdict.abstain_reason or "")


def test_the_strategy_and_its_configuration_are_listed_from_the_registry() -> None:
    assert "self-consistency" in STRATEGIES.names() and "self-consistency" in available_configs()
