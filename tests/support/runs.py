"""Scripted backends and real run folders for tests of what reads runs (the review page, reports, compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from debates.eval.run.batch import BatchRunner
from debates.session import RunSession
from debates.eval.records import RunManifest
from debates.eval.score.report import write_report
from m3d_agents.backends.factory import BackendPool
from m3d_agents.datasets import load_dataset
from m3d_agents.sample import Sample
from tests.support.paths import REPO
from tests.support.scripted import ScriptedClient, scripted_backend, text_of

VERITE = REPO / "tests" / "fixtures" / "datasets" / "VERITE" / "VERITE.csv"
VERITE_SPEC = f"verite:{VERITE}"

Responder = Callable[[Sequence[Any], Mapping[str, Any]], str]


def scripted_pool_factory(responder: Responder, delay_s: float = 0.0) -> tuple[Callable[[], BackendPool], list[ScriptedClient]]:
    """A fresh pool per debate with one backend, ``scripted``, answering through ``responder``."""
    clients: list[ScriptedClient] = []

    def factory() -> BackendPool:
        client = ScriptedClient(responder, delay_s=delay_s)
        clients.append(client)
        pool = BackendPool()
        pool.add(scripted_backend(client, name="scripted"))
        return pool

    return factory, clients


def judged_responder(messages: Sequence[Any], _kwargs: Mapping[str, Any]) -> str:
    """The two sides of a judged debate (and a judge, when no person sits there)."""
    prompt = text_of(messages)
    if "the post IS misinformation" in prompt:
        return "The storm clouds are pasted in: the light on the statue comes from the left, the clouds from the right."
    if "the post is NOT misinformation" in prompt:
        return "Photographers caught storms over the harbour that week; nothing in the picture is impossible."
    return "The lighting argument is stronger.\nFINAL ANSWER: fake\nCONFIDENCE: 0.8"


def verite_responder(messages: Sequence[Any], _kwargs: Mapping[str, Any]) -> str:
    """Right on the Californian fire, wrong on the Greek one, unreadable on the oil spill (an abstention)."""
    prompt = text_of(messages)
    if "oil spill" in prompt:
        return "I cannot tell."
    return "The caption matches the scene.\nFINAL ANSWER: pristine\nCONFIDENCE: 0.9"


def verite_samples() -> list[Sample]:
    return load_dataset(VERITE_SPEC).samples


async def make_run(folder: Path, config: str = "async-three") -> Path:
    """A real run folder written by the batch runner over the VERITE fixture, with its report and plots."""
    factory, _ = scripted_pool_factory(verite_responder)
    pool = factory()
    samples = verite_samples()
    manifest = RunManifest(config=config, dataset=VERITE_SPEC, backend="scripted", seed=0, taxonomy=samples[0].taxonomy)
    async with RunSession(config, pool, backend="scripted", retrieval="off", close_pool=True) as session:
        await BatchRunner(config, samples, session, folder, manifest, concurrency=1).run()
    write_report(folder)
    return folder


