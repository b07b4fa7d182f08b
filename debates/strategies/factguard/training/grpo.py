"""GRPO on TRL with the project's own FactGuard loop as the rollout (paper §3.5, Eq. 5-10, App. A.1).

The rollout (:mod:`~debates.strategies.factguard.training.rollout`) runs the real loop per prompt
with the policy as its model; the four reward terms are logged one by one; λ enters through
``reward_weights`` and Eq. 7's group normalisation is TRL's ``scale_rewards="group"`` over the
weighted sum. Every ablation of the paper is a setting here and an option of ``m3d train grpo``:
α, γ, λ (0 allowed), r⁺, r⁻, the format gate (:class:`RewardConfig`), G and β.

The paper's maximum prompt length, 16,384 tokens, applies to each sample's first prompt (the post,
its frames and its transcript): a sample whose first prompt is longer is left out of training and
named, as agent-RL trainers filter over-long prompts; cutting a prompt would cut its images apart.

With β > 0 and no LoRA, TRL reloads the reference model from the model's folder, so the policy
must come from a folder.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from debates.strategies.factguard.strategy import FactGuard
from debates.strategies.factguard.config import FactGuardConfig
from debates.fidelity import StatedDeparture
from debates.strategies.factguard.training.adapters import merged_model
from debates.strategies.factguard.training.chat_template import TrainingTemplate, training_template
from debates.strategies.factguard.training.departures import training_departures
from debates.strategies.factguard.training.memory import Workload
from debates.strategies.factguard.training.rendering import (image_tokens, is_vision, llm_template_messages, load_processing_class,
                                                             render, tokens_of_image)
from debates.strategies.factguard.training.rewards import RewardConfig, reward_functions, reward_weights
from debates.strategies.factguard.training.rollout import FactGuardRollout, POLICY, trained_config
from debates.strategies.factguard.training.rollout_images import RolloutImages
from debates.strategies.factguard.training.scale import ScaleSettings, world_size
from debates.strategies.factguard.training.trajectories import binary
from debates.session import RunSession
from debates.strategy import RunContext
from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import Backend, BackendPool
from m3d_agents.config_types import Seed, Temperature
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample

log = logging.getLogger(__name__)


class GRPOSettings(BaseModel):
    """The paper's GRPO settings (G = 8, β = 0.04, lr 1e-6, one epoch, 768-token responses, 16,384-token prompts)."""

    model_config = ConfigDict(extra="forbid")

    num_generations: int = Field(8, ge=2, description="G, rollouts per prompt (the paper's 8; Table 4 tries 6 and 12)")
    beta: float = Field(0.04, ge=0, description="β, the KL coefficient against the frozen reference (the paper's 0.04; Table 4 tries 0.02, 0.06)")
    learning_rate: float = Field(1e-6, gt=0, description="the paper's 1e-6")
    num_train_epochs: float = Field(1.0, gt=0, description="the paper's one epoch")
    max_completion_length: int = Field(768, ge=8, description="tokens per model turn of a rollout (the paper's 768)")
    max_prompt_length: int = Field(16384, ge=64, description="tokens of a sample's first prompt; longer samples are left out (the paper's 16,384)")
    temperature: Temperature = Field(1.0, description="sampling temperature of rollouts (unstated; ours)")
    epsilon: float = Field(0.2, gt=0, description="the clipping range of the importance ratio (unstated; TRL's default)")
    max_steps: int = Field(-1, description="-1: as many as the epochs give")
    seed: Seed = Field(0, description="the trainer's seed (data order, initialisation) and the rollouts' first seed")
    vllm_server: str | None = Field(None, description="URL of a `trl vllm-serve` server to sample rollouts from; None: HF generate")
    rollout_batch_size: int = Field(
        8, ge=1, description="HF generate: the most rollout turns generated in one batched call (the rollouts of a step run "
        "at once and their waiting turns are gathered); 1: one rollout at a time. The tokens are those of the sequential "
        "path; a larger batch holds more KV cache on the GPU (ours; unused with a vLLM server, which batches itself)")
    reward: RewardConfig = Field(default_factory=RewardConfig)
    scale: ScaleSettings = Field(default_factory=ScaleSettings)


def accumulation(settings: GRPOSettings, processes: int) -> int:
    """Gradient accumulation that makes one optimisation step see one group of G rollouts.

    The paper runs a per-device batch of 1 on 8 GPUs without accumulation: with G = 8 that is one
    group per step. One process reproduces it by accumulating G batches of 1; k processes
    accumulate G / k each.
    """
    if settings.num_generations % processes:
        raise InputError("num_generations", f"G = {settings.num_generations} does not split over {processes} processes")
    return settings.num_generations // processes


def grpo_args(settings: GRPOSettings, output_dir: Path, processes: int | None = None, **overrides: Any) -> Any:
    """TRL's ``GRPOConfig`` for the settings: batch 1 per device, one group of G per optimisation step."""
    from trl import GRPOConfig

    values: dict[str, Any] = dict(
        output_dir=str(output_dir), num_generations=settings.num_generations, beta=settings.beta,
        learning_rate=settings.learning_rate, num_train_epochs=settings.num_train_epochs,
        max_completion_length=settings.max_completion_length, loss_type="grpo", scale_rewards="group",
        reward_weights=reward_weights(settings.reward), epsilon=settings.epsilon, max_steps=settings.max_steps,
        per_device_train_batch_size=1, gradient_accumulation_steps=accumulation(settings, processes or world_size()),
        temperature=settings.temperature, logging_steps=1, save_strategy="no", report_to=[], seed=settings.seed,
        disable_tqdm=True, **settings.scale.trainer_args(),
    )
    if settings.vllm_server:
        # The rollout re-renders multi-turn conversations, so vLLM's per-token log-probs do not line up with
        # the trained ids; TRL's importance-sampling correction is left off.
        values.update(use_vllm=True, vllm_mode="server", vllm_server_base_url=settings.vllm_server,
                      vllm_importance_sampling_correction=False)
    values.update(overrides)
    return GRPOConfig(**values)


@dataclass(frozen=True)
class PromptFit:
    """Which samples fit the prompt cap, the length of each that does not, and the longest kept."""

    kept: list[Sample]
    too_long: dict[str, int]
    longest: int = 0
    """Tokens of the longest first prompt kept."""
    image_tokens: int = 0
    """The most tokens standing for images in a kept first prompt."""


def measure_prompts(samples: Sequence[Sample], config: FactGuardConfig, processing_class: Any, template: TrainingTemplate,
                    cap: int) -> PromptFit:
    """Render each sample's first prompt as the rollout will and keep those within ``cap`` tokens."""
    from debates.strategies.factguard.training.policy_clients import PromptRenderer

    pool = BackendPool()
    pool.add(Backend(POLICY, BackendConfig(kind="local", cache=False), PromptRenderer(processing_class, template)))
    strategy = FactGuard(config)
    kept, too_long, longest, most_images = [], {}, 0, 0
    for sample in samples:
        opening = strategy.opening(sample, RunContext(pool=pool, backend=POLICY))
        ids = render(processing_class, template, llm_template_messages(opening), add_generation_prompt=True).ids
        if len(ids) > cap:
            too_long[sample.id] = len(ids)
        else:
            kept.append(sample)
            longest, most_images = max(longest, len(ids)), max(most_images, image_tokens(processing_class, ids))
    return PromptFit(kept, too_long, longest, most_images)


TOOL_TEXT_TOKENS = 512
"""What the memory estimate allows for the text of a tool result (FactProbe's five results, ClipScout's note)."""


def rollout_workload(fit: PromptFit, config: FactGuardConfig, settings: GRPOSettings, grid_tokens: int, processes: int = 1) -> Workload:
    """The longest sequence the rollouts can make from the kept samples: the longest first prompt, every turn at its
    token limit, and tool results holding a ClipScout grid at its largest; with the turns HF generate runs at once."""
    turns = config.max_turns
    results = (turns - 1) * (grid_tokens + TOOL_TEXT_TOKENS)
    completion = turns * settings.max_completion_length + results
    rows = 0 if settings.vllm_server else min(settings.rollout_batch_size, max(1, settings.num_generations // processes))
    return Workload(sequence=fit.longest + completion, logits=completion, image_tokens=fit.image_tokens + (turns - 1) * grid_tokens,
                    generation_rows=rows, generation_prompt=fit.longest + completion - settings.max_completion_length)


@dataclass
class GRPOPlan:
    """What is known before the policy loads: the folder it loads from, how it reads, which samples train, the longest
    sequence they make, and where the run departs from the paper."""

    model_dir: Path
    processing_class: Any
    template: TrainingTemplate
    config: FactGuardConfig
    fit: PromptFit
    workload: Workload
    departures: list[StatedDeparture]


def plan_grpo(model_dir: Path, samples: Sequence[Sample], config: FactGuardConfig, settings: GRPOSettings | None = None, *,
              processing_class: Any = None, chat_template: Path | None = None) -> GRPOPlan:
    """Everything before the model loads; a folder holding an SFT adapter is merged into its base first
    (:mod:`~debates.strategies.factguard.training.adapters`)."""
    settings = settings or GRPOSettings()
    model_dir = merged_model(Path(model_dir))
    processing_class = processing_class if processing_class is not None else load_processing_class(model_dir)
    template = training_template(processing_class, str(model_dir), chat_template)
    trained = trained_config(config)
    fit = measure_prompts(samples, trained, processing_class, template, settings.max_prompt_length)
    side = trained.grid_max_side
    workload = rollout_workload(fit, trained, settings, tokens_of_image(processing_class, template, side, side), world_size())
    departures = training_departures(settings.scale, settings.scale.resolved_dtype(), reward=settings.reward,
                                     prompt_cap=settings.max_prompt_length, left_out=fit.too_long, samples=len(samples))
    return GRPOPlan(model_dir, processing_class, template, trained, fit, workload, departures)


def prompt_dataset(samples: Sequence[Sample]) -> Any:
    """One row per sample: the prompt is the sample id (the rollout builds the real prompt), plus its gold label."""
    from datasets import Dataset

    rows = []
    for sample in samples:
        gold = binary(sample.gold_label, sample.taxonomy)
        if gold is None:
            raise InputError(f"sample {sample.id}", "GRPO needs a gold label for every sample")
        rows.append({"prompt": sample.id, "gold": gold})
    return Dataset.from_list(rows)


@dataclass
class GRPORun:
    """A finished run: the trainer (its ``state.log_history`` has the per-term rewards) and what the rollouts held."""

    trainer: Any
    rollout: FactGuardRollout
    fit: PromptFit
    template: TrainingTemplate


def train_grpo(
    model_dir: Path,
    samples: Sequence[Sample],
    config: FactGuardConfig,
    output_dir: Path,
    settings: GRPOSettings | None = None,
    *,
    session: RunSession | None = None,
    processing_class: Any = None,
    chat_template: Path | None = None,
    extra_rewards: Sequence[Callable[..., list[float]]] = (),
    plan: GRPOPlan | None = None,
    callbacks: Sequence[Any] = (),
    **overrides: Any,
) -> GRPORun:
    """Run GRPO on ``samples`` with the FactGuard loop as the rollout and return the run.

    ``session`` (a :class:`~debates.session.RunSession` of ``config`` with ``backend="policy"``, open) is the
    run session the rollouts run in: its retrieval answers FactProbe; the run closes it when it ends, in
    the event loop the rollouts used it from. None: retrieval off. ``plan`` is :func:`plan_grpo`'s, when the
    caller made it first (to print the departures and check memory before the model loads); ``callbacks`` are
    transformers ``TrainerCallback``s (a benchmark times the steps with one).
    """
    from debates.strategies.factguard.training.trainer import FactGuardGRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    settings = settings or GRPOSettings()
    images = RolloutImages()
    try:
        plan = plan or plan_grpo(model_dir, samples, config, settings, processing_class=processing_class, chat_template=chat_template)
    except BaseException:
        if session is not None:  # the run owns the session it was given, whatever stops it
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(session.close())
            finally:
                loop.close()
        raise
    rollout = FactGuardRollout(config, samples, plan.template, settings.max_completion_length, settings.temperature, settings.seed,
                               session, images, settings.rollout_batch_size)
    try:
        fit = plan.fit
        for sample_id, tokens in fit.too_long.items():
            log.warning("sample %s left out: its first prompt has %d tokens, over the %d-token cap", sample_id, tokens,
                        settings.max_prompt_length)
        if not fit.kept:
            raise InputError("samples", f"no sample's first prompt fits in {settings.max_prompt_length} tokens")
        args = grpo_args(settings, output_dir, **overrides)
        if extra_rewards:
            args.reward_weights = [*reward_weights(settings.reward), *([1.0] * len(extra_rewards))]
        trainer = FactGuardGRPOTrainer(
            model=str(plan.model_dir), reward_funcs=[*reward_functions(settings.reward), *extra_rewards], args=args,
            train_dataset=prompt_dataset(fit.kept), processing_class=plan.processing_class, rollout_func=rollout,
            peft_config=settings.scale.peft_config(), rollout_images=images, callbacks=list(callbacks) or None,
        )
        if is_vision(plan.processing_class):
            log.info("vision-language policy: frames and ClipScout grids reach the forward pass as images")
        trainer.train()
    finally:
        rollout.close()
    return GRPORun(trainer, rollout, plan.fit, plan.template)
