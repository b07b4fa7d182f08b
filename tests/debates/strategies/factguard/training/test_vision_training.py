"""Vision-language training on a tiny random Qwen2.5-VL built here: the images reach every forward pass, the
assistant mask has tokens, a template that cannot mark them is a named error, FactProbe replays recorded results."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from pathlib import Path
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.train
pytest.importorskip("trl")

from debates.config_loader import load_config, with_overrides  # noqa: E402
from debates.strategies.factguard.config import FactGuardConfig  # noqa: E402
from debates.strategies.factguard.training.chat_template import ChatTemplateError, training_template  # noqa: E402
from debates.strategies.factguard.training.grpo import GRPORun, GRPOSettings, train_grpo  # noqa: E402
from debates.strategies.factguard.training.rendering import render  # noqa: E402
from debates.strategies.factguard.training.sft import train_sft  # noqa: E402
from m3d_agents.backends.factory import BackendPool  # noqa: E402
from m3d_agents.sample import Sample, VideoRef  # noqa: E402
from retrieval.providers.base import SearchHit  # noqa: E402
from debates.session import RunSession  # noqa: E402
from retrieval.store import EvidenceStore  # noqa: E402
from tests.support.tiny_vision_model import tiny_vision_model  # noqa: E402
from tests.support.videos import make_clip  # noqa: E402

SCOUT = '<think>the middle decides</think><tool_call>{"name": "clip_scout", "arguments": {"start_s": 1, "end_s": 3}}</tool_call>'
PROBE = '<think>was there a flood</think><tool_call>{"name": "fact_probe", "arguments": {"query": "flood in town"}}</tool_call>'
ANSWER = "<think>the evidence settles it</think><answer>fake</answer>"
OWN_MARKS = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


@pytest.fixture(scope="module")
def vlm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return tiny_vision_model(tmp_path_factory.mktemp("tiny-vl"))


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", seconds=4)


@pytest.fixture
def seen_images(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many images each call of the vision tower got: what reached a forward pass as pixels."""
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qwen

    seen: list[int] = []
    original = qwen.Qwen2_5_VisionTransformerPretrainedModel.forward

    def counting(self: Any, hidden_states: Any, grid_thw: Any, **kwargs: Any) -> Any:
        seen.append(int(grid_thw.shape[0]))
        return original(self, hidden_states, grid_thw, **kwargs)

    monkeypatch.setattr(qwen.Qwen2_5_VisionTransformerPretrainedModel, "forward", counting)
    return seen


@pytest.fixture
def scripted_policy(monkeypatch: pytest.MonkeyPatch, vlm: tuple[Path, Any]) -> Iterator[dict[str, str]]:
    """The policy's sampling replaced by a script (first turn; after tool results, fake and real in turn for each
    post, so every group holds a right and a wrong answer), as TRL's own tests patch ``generate``; everything else
    (rendering, the loop, the tools, the trainer) is real."""
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    _, processor = vlm
    script = {"first": SCOUT, "after": ANSWER}
    answers: dict[str, Iterator[int]] = {}

    def generate(self: Any, input_ids: Any, attention_mask: Any, **kwargs: Any) -> Any:
        rows = []
        for ids, mask in zip(input_ids, attention_mask):  # a batch of left-padded turns: each row is answered alone
            prompt = processor.tokenizer.decode(ids[mask.bool()])
            text = script["first"]
            if "Results of your tool calls" in prompt:
                post = next(p for p in ("post 0", "post 1") if p in prompt)
                turn = next(answers.setdefault(post, itertools.count()))
                text = script["after"] if turn % 2 == 0 else script["after"].replace("<answer>fake", "<answer>real")
            rows.append(processor.tokenizer(text + "<|im_end|>", add_special_tokens=False, return_tensors="pt")["input_ids"][0])
        longest = max(len(row) for row in rows)
        pad = processor.tokenizer.pad_token_id
        new = torch.stack([torch.cat([row, torch.full((longest - len(row),), pad)]) for row in rows])
        return torch.cat([input_ids, new.to(input_ids.device)], dim=1)

    monkeypatch.setattr(Qwen2_5_VLForConditionalGeneration, "generate", generate)
    yield script


def factguard(tmp_path: Path) -> FactGuardConfig:
    config = with_overrides(load_config("factguard"), overview_frames=2, artifacts_dir=str(tmp_path / "grids"))
    assert isinstance(config, FactGuardConfig)
    return config


def posts(clip: Path) -> list[Sample]:
    return [Sample(text=f"post {i}: a flood in town", video=VideoRef(path=clip), gold_label=("fake" if i else "real")) for i in range(2)]


def test_qwen_templates_get_generation_marks_and_an_unmarked_template_is_a_named_error(vlm: tuple[Path, Any], tmp_path: Path) -> None:
    _, processor = vlm
    from PIL import Image

    messages = [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "image": Image.new("RGB", (40, 40))}]},
                {"role": "assistant", "content": ANSWER}]
    template = training_template(processor, "tiny-qwen")
    assert template.source == "TRL's qwen2_5_vl training template"
    own = type(template)(processor.chat_template, "the model's own template", "tiny-qwen")
    assert sum(render(processor, own, messages, with_mask=True).mask) == 0, "Qwen's own template marks nothing: a zero loss"
    with pytest.raises(ChatTemplateError, match="model tiny-qwen, the model's own template: the assistant mask .* has no tokens"):
        own.require_tokens(render(processor, own, messages, with_mask=True).mask)
    rendered = render(processor, template, messages, with_mask=True)
    assert sum(rendered.mask) > 0 and len(rendered.images) == 1 and rendered.features["image_grid_thw"].shape[0] == 1

    from tests.support.tiny_vision_model import image_only_processor_class

    unknown = image_only_processor_class()(image_processor=processor.image_processor, tokenizer=processor.tokenizer,
                                          chat_template=OWN_MARKS)
    with pytest.raises(ChatTemplateError, match="model tiny-qwen, the model's own template: it has no .*generation.* TRL ships no"):
        training_template(unknown, "tiny-qwen")
    empty = tmp_path / "empty.jinja"
    empty.write_text("{% for m in messages %}{{ m['content'] }}{% generation %}{% endgeneration %}{% endfor %}")
    chosen = training_template(unknown, "tiny-qwen", empty)
    text_only = [{"role": "user", "content": "look"}, {"role": "assistant", "content": ANSWER}]
    with pytest.raises(ChatTemplateError, match=f"model tiny-qwen, the template file {empty}: the assistant mask"):
        chosen.require_tokens(render(unknown, chosen, text_only, with_mask=True).mask)


def test_one_sft_step_passes_the_frames_and_the_grid_through_the_processor(vlm: tuple[Path, Any], tmp_path: Path,
                                                                        seen_images: list[int]) -> None:
    from PIL import Image

    folder, processor = vlm
    Image.new("RGB", (64, 48), (200, 0, 0)).save(tmp_path / "frame.png")
    Image.new("RGB", (64, 64), (0, 200, 0)).save(tmp_path / "grid.png")
    row = {"messages": [
        {"role": "system", "content": "check posts"},
        {"role": "user", "content": [{"type": "text", "text": "post: a flood"}, {"type": "image"}]},
        {"role": "assistant", "content": SCOUT},
        {"role": "user", "content": [{"type": "text", "text": "Results of your tool calls"}, {"type": "image"}]},
        {"role": "assistant", "content": ANSWER},
    ], "images": [str(tmp_path / "frame.png"), str(tmp_path / "grid.png")]}
    data = tmp_path / "sft.jsonl"
    data.write_text((json.dumps(row) + "\n") * 2)
    trainer = train_sft(folder, data, tmp_path / "out", processing_class=processor, max_steps=1, gradient_accumulation_steps=2)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.state.global_step == 1 and losses and all(math.isfinite(v) and v > 0 for v in losses)
    assert seen_images == [2, 2], "each row's frame and grid reached the forward pass"


def test_one_grpo_step_on_two_samples_sees_the_frames_and_the_clipscout_grid(vlm: tuple[Path, Any], clip: Path, tmp_path: Path,
                                                                           seen_images: list[int], scripted_policy: dict[str, str]) -> None:
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    folder, processor = vlm
    before = {k: v.clone() for k, v in Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).state_dict().items()}
    settings = GRPOSettings(num_generations=2, max_completion_length=96, learning_rate=1e-2, max_steps=1, beta=0.04)
    run: GRPORun = train_grpo(folder, posts(clip), factguard(tmp_path), tmp_path / "out", settings, processing_class=processor,
                              gradient_accumulation_steps=4)
    assert run.trainer.state.global_step == 1 and run.template.source == "TRL's qwen2_5_vl training template"
    stats = run.rollout.stats
    assert stats.images == [3, 3, 3, 3], "two overview frames and the ClipScout grid in each of the 4 rollouts"
    assert stats.batches == [4, 4], "the four first turns in one generate call, then the four answers after the grid"
    assert all(n > 0 for n in stats.mask_tokens)
    assert len(stats.observations) == 4 and all("clip_scout: frames of 1-3 s" in text for text in stats.observations)
    assert seen_images == [3] * 8, "the reference pass and the loss pass each saw the 3 images of each of the 4 rollouts"
    logs = [entry for entry in run.trainer.state.log_history if "loss" in entry]
    assert logs and math.isfinite(logs[0]["loss"]) and logs[0]["rewards/accuracy/mean"] == 0.5
    after = run.trainer.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before), "the weights changed"


def test_fact_probe_in_a_grpo_rollout_answers_from_a_replayed_store(vlm: tuple[Path, Any], clip: Path, tmp_path: Path,
                                                                   scripted_policy: dict[str, str]) -> None:
    folder, processor = vlm
    scripted_policy["first"] = PROBE
    store_path = tmp_path / "evidence.sqlite"
    recorded = [SearchHit(url="https://www.facebook.com/p/1", title="A post", snippet="my video", provider="serper", rank=0)]
    recorded += [SearchHit(url=f"https://news{i}.example.org/flood", title=f"Recorded report {i}", snippet=f"The flood, report {i}.",
                           provider="serper", rank=i) for i in range(1, 8)]
    store = EvidenceStore(store_path, "record")

    async def produce() -> list[SearchHit]:
        return recorded

    asyncio.run(store.fetch("serper", "flood in town", produce, list[SearchHit]))
    store.close()
    config = factguard(tmp_path)
    session = RunSession(config, BackendPool(), backend="policy", retrieval="replay", evidence_store=store_path)
    asyncio.run(session.open())
    settings = GRPOSettings(num_generations=2, max_completion_length=96, max_steps=1, beta=0.0)
    run = train_grpo(folder, posts(clip)[:1], config, tmp_path / "out", settings, processing_class=processor, session=session)
    reports = run.rollout.stats.observations
    assert len(reports) == 2 and all("fact_probe results for 'flood in town'" in r for r in reports)
    for report in reports:
        assert [f"Recorded report {i}" in report for i in range(1, 7)] == [True] * 5 + [False], "the top five usable results"
        assert "facebook" not in report
    assert len(EvidenceStore(store_path, "replay")) == 1, "replay wrote nothing and asked no one"


def test_grpo_from_an_sft_adapter_starts_from_the_sft_policy_and_holds_it_as_the_kl_reference(
        vlm: tuple[Path, Any], clip: Path, tmp_path: Path, scripted_policy: dict[str, str]) -> None:
    """The guide's one-GPU chain: ``train sft --lora`` saves an adapter, ``train grpo --model runs/sft --lora`` trains on.
    GRPO must start from the SFT policy and its KL reference must be that policy (the paper's π_ref), not the base."""
    import torch
    from peft import PeftModel
    from transformers import Qwen2_5_VLForConditionalGeneration

    from debates.strategies.factguard.training.scale import LoraSettings, ScaleSettings
    from debates.strategies.factguard.training.sft import SFTSettings
    from debates.strategies.factguard.training.trainer import FactGuardGRPOTrainer

    folder, processor = vlm
    rows = {"messages": [{"role": "user", "content": "post 0: a flood in town"}, {"role": "assistant", "content": ANSWER}],
            "images": []}
    data = tmp_path / "sft.jsonl"
    data.write_text((json.dumps(rows) + "\n") * 2)
    lora = ScaleSettings(lora=LoraSettings(r=8, alpha=16, dropout=0.0))
    sft = tmp_path / "sft"
    trainer = train_sft(folder, data, sft, SFTSettings(scale=lora), processing_class=processor, max_steps=2,
                        gradient_accumulation_steps=1, learning_rate=5e-2)
    trainer.save_model(str(sft))
    assert (sft / "adapter_config.json").is_file() and not (sft / "config.json").exists(), "SFT saved an adapter only"

    recorded: dict[str, Any] = {}
    original = FactGuardGRPOTrainer._generate_and_score_completions

    def recording(self: FactGuardGRPOTrainer, inputs: Any) -> Any:
        output = original(self, inputs)
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        recorded.update(output=output, ids=ids, mask=mask, images=self.rollout_images.batch(ids, mask))
        return output

    settings = GRPOSettings(num_generations=2, max_completion_length=96, max_steps=1, beta=0.04, scale=lora)
    FactGuardGRPOTrainer._generate_and_score_completions = recording  # type: ignore[method-assign]
    try:
        run = train_grpo(sft, posts(clip)[:1], factguard(tmp_path), tmp_path / "grpo", settings, processing_class=processor,
                         gradient_accumulation_steps=2)
    finally:
        FactGuardGRPOTrainer._generate_and_score_completions = original  # type: ignore[method-assign]
    assert (sft / "merged" / "config.json").is_file(), "the adapter was merged into its base once, beside it"

    def logps(model: Any) -> Any:
        output, ids, mask = recorded["output"], recorded["ids"], recorded["mask"]
        keep = output["completion_ids"].shape[1]
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask, **recorded["images"]).logits[:, -keep - 1: -1].float()
        chosen = torch.log_softmax(logits, dim=-1).gather(-1, output["completion_ids"].unsqueeze(-1)).squeeze(-1)
        return chosen[output["completion_mask"].bool()]

    sft_policy = PeftModel.from_pretrained(Qwen2_5_VLForConditionalGeneration.from_pretrained(folder), str(sft)).eval()
    base = Qwen2_5_VLForConditionalGeneration.from_pretrained(folder).eval()
    reference = recorded["output"]["ref_per_token_logps"][recorded["output"]["completion_mask"].bool()]
    assert torch.allclose(reference, logps(sft_policy), atol=1e-4), "the KL reference is the SFT policy"
    assert (reference - logps(base)).abs().max() > 1e-2, "and not the base model"

    merged = sft_policy.merge_and_unload().state_dict()
    started = {name.removeprefix("base_model.model.").replace(".base_layer", ""): weight
               for name, weight in run.trainer.model.state_dict().items() if "lora_" not in name}
    assert started.keys() == merged.keys()
    assert all(torch.equal(started[name], merged[name]) for name in merged), "GRPO's frozen weights are the SFT policy's"
    assert not all(torch.equal(merged[name], weight) for name, weight in base.state_dict().items())


def test_sft_trains_the_models_turns_and_no_prompt_image_or_tool_token(vlm: tuple[Path, Any], tmp_path: Path) -> None:
    """The loss mask is placed by the project, not by the processor (which misplaces it once images are expanded on
    transformers before 5.18): exactly the model's two turns are trained, with two images in the row."""
    from PIL import Image

    from debates.strategies.factguard.training.sft import SFTSettings, plan_sft, vision_collator

    folder, processor = vlm
    Image.new("RGB", (1280, 720), (200, 0, 0)).save(tmp_path / "frame.png")
    Image.new("RGB", (1024, 576), (0, 200, 0)).save(tmp_path / "grid.png")
    row = {"messages": [
        {"role": "system", "content": "check posts"},
        {"role": "user", "content": [{"type": "text", "text": "post: a flood"}, {"type": "image"}]},
        {"role": "assistant", "content": SCOUT},
        {"role": "user", "content": [{"type": "text", "text": "Results of your tool calls"}, {"type": "image"}]},
        {"role": "assistant", "content": ANSWER},
    ], "images": [str(tmp_path / "frame.png"), str(tmp_path / "grid.png")]}
    data = tmp_path / "sft.jsonl"
    data.write_text(json.dumps(row) + "\n")
    settings = SFTSettings()
    plan = plan_sft(folder, data, settings, processing_class=processor)
    batch = vision_collator(plan.processing_class, plan.template, settings)(plan.data.rows)
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    trained = processor.tokenizer.decode(ids[labels != -100])
    assert trained == f"{SCOUT}<|im_end|>\n{ANSWER}<|im_end|>\n", "TRL's training template marks each turn's end and newline"
    assert batch["image_grid_thw"].shape[0] == 2 and int((ids == processor.image_token_id).sum()) == 4, "two images, 2 tokens each"
