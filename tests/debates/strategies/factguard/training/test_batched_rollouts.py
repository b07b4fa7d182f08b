"""Batched rollouts on HF generate train exactly what the sequential path trains: the same tokens, masks and images
per rollout, on a tiny random Qwen2.5-VL at temperature 0, with rows of different lengths, images and ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip("trl")

from autogen_core.models import UserMessage  # noqa: E402

from debates.config_loader import load_config, with_overrides  # noqa: E402
from debates.strategies.factguard.config import FactGuardConfig  # noqa: E402
from debates.strategies.factguard.training.chat_template import training_template  # noqa: E402
from debates.strategies.factguard.training.policy_clients import HFPolicyClient  # noqa: E402
from debates.strategies.factguard.training.rollout import FactGuardRollout  # noqa: E402
from m3d_agents.sample import Sample, VideoRef  # noqa: E402
from tests.support.tiny_vision_model import tiny_vision_model  # noqa: E402
from tests.support.videos import make_clip  # noqa: E402

TOKENS = 40


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    torch.manual_seed(0)
    folder, processor = tiny_vision_model(tmp_path_factory.mktemp("tiny-vl"))
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).eval()
    with torch.no_grad():  # larger weights, so that what a random model writes depends on the post it read
        for name, weight in model.model.language_model.named_parameters():
            if weight.dim() == 2 and "embed" not in name:
                weight.mul_(5.0)
    return model, processor


def posts(tmp_path: Path) -> list[Sample]:
    """Two posts with a video (two frames each) and one without (no image), of different lengths, twice each (G = 2)."""
    clip = make_clip(tmp_path / "clip.mp4", seconds=4)
    distinct = [Sample(text="post 0: a flood in town", video=VideoRef(path=clip), gold_label="fake"),
                Sample(text="post 1: the mayor opened a new bridge over the river yesterday, said the paper", video=VideoRef(path=clip),
                       gold_label="real"),
                Sample(text="post 2: no video here", gold_label="fake")]
    return [sample for sample in distinct for _ in range(2)]


def collect(model: Any, processor: Any, samples: list[Sample], tmp_path: Path, batch_size: int) -> tuple[dict[str, Any], Any, list[int]]:
    config = with_overrides(load_config("factguard"), overview_frames=2, artifacts_dir=str(tmp_path / "grids"))
    assert isinstance(config, FactGuardConfig)
    template = training_template(processor, "tiny-qwen")
    rollout = FactGuardRollout(config, samples, template, TOKENS, 0.0, batch_size=batch_size)
    client = HFPolicyClient(model, processor, template, TOKENS, 0.0, batch_size)
    try:
        out = rollout.collect(samples, processor, client)
    finally:
        rollout.close()
    features = [rollout.images._features.get(tuple(p + c)) for p, c in zip(out["prompt_ids"], out["completion_ids"])]
    return out, (rollout.stats, features, client.actual_usage()), client.batches


def test_batched_rollouts_train_the_tokens_masks_and_images_of_the_sequential_path(policy: tuple[Any, Any], tmp_path: Path) -> None:
    import torch

    model, processor = policy
    samples = posts(tmp_path)
    end = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    first, _, _ = collect(model, processor, samples, tmp_path, 1)
    # A random model rarely ends a turn: a token that the second post's turn holds and the first post's does not also
    # ends a turn, so the rows of a batch stop at their own ends.
    stop = next(t for t in first["completion_ids"][2] if t not in first["completion_ids"][0] and t != end)
    model.generation_config.eos_token_id = [end, stop]
    try:
        sequential, (seq_stats, seq_features, seq_usage), seq_batches = collect(model, processor, samples, tmp_path, 1)
        batched, (bat_stats, bat_features, bat_usage), bat_batches = collect(model, processor, samples, tmp_path, 8)
    finally:
        model.generation_config.eos_token_id = end
    assert seq_batches == [1] * 6 and bat_batches == [6], "one generate call per turn, against one call for all six turns"
    lengths = [len(c) for c in sequential["completion_ids"]]
    assert len(set(lengths)) > 1, f"the rows end at different lengths: {lengths}"
    for field in ("prompt_ids", "completion_ids", "env_mask"):
        assert batched[field] == sequential[field], field
    assert batched["outcome"] == sequential["outcome"]
    assert bat_usage == seq_usage, "each row counted up to its own end, not the batch's longest"
    assert seq_stats.images == bat_stats.images == [2, 2, 2, 2, 0, 0], "each row's frames, none for the post without a video"
    for one, other in zip(seq_features, bat_features):
        assert (one is None) == (other is None)
        if one is not None:
            assert one.keys() == other.keys() and all(torch.equal(one[k], other[k]) for k in one)


async def test_a_turn_waits_for_the_running_rollouts_and_a_lone_turn_is_answered_at_once(policy: tuple[Any, Any]) -> None:
    import asyncio

    model, processor = policy
    client = HFPolicyClient(model, processor, training_template(processor, "tiny-qwen"), 4, 0.0, batch_size=3)
    alone = await client.create([UserMessage(content="a flood", source="user")])
    assert client.batches == [1] and alone.usage.completion_tokens <= 4, "outside a rollout nothing is waited for"

    async def rollout(text: str, pause: float) -> str:
        async with client.rollout():
            await asyncio.sleep(pause)  # a tool call, say, before its turn
            answer = await client.create([UserMessage(content=text, source="user")])
            return str(answer.content)

    answers = await asyncio.gather(rollout("one", 0.0), rollout("two", 0.05), rollout("three", 0.0), rollout("four", 0.1))
    assert client.batches == [1, 3, 1], "three turns filled a batch; the last rollout's turn then went alone"
    assert len(answers) == 4
