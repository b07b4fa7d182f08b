"""GRPO on TRL with the project's own FactGuard loop as the rollout (paper §3.5, Eq. 5-10, App. A.1).

Each rollout runs :class:`~debates.strategies.factguard.FactGuard` on one sample with the policy
being trained as its backend (:class:`~debates.strategies.factguard.training.hf_client.HFChatClient`): the same prompts,
parser, tools and budgets as inference. The conversation it recorded is tokenized with the chat
template; the policy's own turns are trained and everything else (tool results, the instructions
between turns) is masked out through TRL's ``env_mask``. The four reward terms are logged one by
one; λ enters through ``reward_weights`` and Eq. 7's group normalisation is TRL's
``scale_rewards="group"`` over the weighted sum.

TRL quirks this relies on (1.16; the rollout hook is experimental): the prompts handed to the rollout
are already repeated ``num_generations`` times, so it returns one completion per prompt; with
β > 0 the reference model is reloaded from the model's folder, so the policy must come from a folder.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel, Field

from debates.strategies.factguard.config import FactGuardConfig
from debates.session import run_sample
from debates.config_loader import with_overrides
from debates.strategies.factguard.training.rewards import RewardConfig, reward_functions, reward_weights
from debates.strategies.factguard.training.trajectories import binary
from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import Backend, BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.diagnostics import FactGuardDiagnostics
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample


class GRPOSettings(BaseModel):
    """The paper's GRPO settings (G = 8, β = 0.04, lr 1e-6, one epoch, 768-token responses)."""

    num_generations: int = Field(8, ge=2)
    beta: float = Field(0.04, ge=0)
    learning_rate: float = Field(1e-6, gt=0)
    num_train_epochs: float = Field(1.0, gt=0)
    max_completion_length: int = Field(768, ge=8, description="tokens per model turn of a rollout")
    temperature: float = Field(1.0, ge=0, description="sampling temperature of rollouts (unstated; ours)")
    epsilon: float = 0.2
    max_steps: int = Field(-1, description="-1: as many as the epochs give")
    seed: int = 0


def grpo_args(settings: GRPOSettings, output_dir: Path, reward: RewardConfig | None = None, **overrides: Any) -> Any:
    """TRL's ``GRPOConfig`` for the paper's settings on one process.

    The paper runs a per-device batch of 1 on 8 GPUs, so one optimisation step sees one group of 8;
    one process reproduces that with a batch of 1 accumulated over the group, which also keeps the
    logits of a long prompt over a large vocabulary to one sequence at a time.
    """
    import torch
    from trl import GRPOConfig

    values: dict[str, Any] = dict(
        output_dir=str(output_dir), num_generations=settings.num_generations, beta=settings.beta,
        learning_rate=settings.learning_rate, num_train_epochs=settings.num_train_epochs,
        max_completion_length=settings.max_completion_length, loss_type="grpo", scale_rewards="group",
        reward_weights=reward_weights(reward), epsilon=settings.epsilon, max_steps=settings.max_steps,
        per_device_train_batch_size=1, gradient_accumulation_steps=settings.num_generations,
        temperature=settings.temperature, logging_steps=1, save_strategy="no", report_to=[], seed=settings.seed,
        use_cpu=not torch.cuda.is_available(), bf16=False, disable_tqdm=True,
        gradient_checkpointing=torch.cuda.is_available(),
    )
    values.update(overrides)
    return GRPOConfig(**values)


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


def assistant_span(tokenizer: Any, first: list[dict[str, Any]], conversation: list[dict[str, Any]]) -> tuple[list[int], list[int], list[int]]:
    """Prompt ids, completion ids and the mask of the model's own tokens in the completion."""
    prompt = tokenizer.apply_chat_template(first, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    full = tokenizer.apply_chat_template(conversation, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = list(full["input_ids"]), list(full["assistant_masks"])
    if ids[: len(prompt)] != list(prompt):
        raise RuntimeError("the chat template does not render the first prompt as a prefix of the conversation")
    completion, completion_mask = ids[len(prompt):], mask[len(prompt):]
    last = max((i for i, m in enumerate(completion_mask) if m), default=len(completion) - 1)
    return list(prompt), completion[: last + 1], completion_mask[: last + 1]


class FactGuardRollout:
    """TRL's ``rollout_func``: the FactGuard loop per prompt, with the policy as its model."""

    def __init__(self, config: FactGuardConfig, samples: Sequence[Sample], settings: GRPOSettings,
                 searchers: Mapping[str, Any] | None = None) -> None:
        self.config = with_overrides(config, parse_retries=0, describe_frames=False)
        self.samples = {s.id: s for s in samples}
        self.settings = settings
        self.searchers = dict(searchers or {})
        self.seeds = itertools.count(settings.seed * 100_000)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        from debates.strategies.factguard.training.hf_client import HFChatClient

        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        client = HFChatClient(model, tokenizer, self.settings.max_completion_length, self.settings.temperature)
        pool = BackendPool()
        pool.add(Backend("policy", BackendConfig(kind="local", cache=False, concurrency=1), client))
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "outcome": []}
        for prompt in prompts:
            sample = self.samples[str(prompt)]
            ledger = UsageLedger(record_messages=True)
            verdict = asyncio.run(run_sample(self.config, sample, pool, backend="policy", seed=next(self.seeds), ledger=ledger,
                                             searchers=self.searchers))
            last = [e for e in ledger.exchanges if e.agent == "verifier"][-1]
            first = ledger.exchanges[0].messages
            conversation = [*last.messages, {"role": "assistant", "content": last.completion}]
            strip = [{"role": m["role"], "content": m["content"]} for m in conversation]
            prompt_ids, completion_ids, mask = assistant_span(tokenizer, [{"role": m["role"], "content": m["content"]} for m in first], strip)
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion_ids)
            out["env_mask"].append(mask)
            checked = verdict.diagnostics if isinstance(verdict.diagnostics, FactGuardDiagnostics) else None
            out["outcome"].append({
                "predicted": binary(verdict.label, verdict.taxonomy), "gold": binary(sample.gold_label, sample.taxonomy),
                "well_formed": checked is not None and checked.format_ok, "used_tool": checked is not None and checked.used_tools,
            })
        return {**out, "logprobs": None}


def train_grpo(
    model_dir: Path,
    samples: Sequence[Sample],
    config: FactGuardConfig,
    output_dir: Path,
    settings: GRPOSettings | None = None,
    reward: RewardConfig | None = None,
    searchers: Mapping[str, Any] | None = None,
    extra_rewards: Sequence[Callable[..., list[float]]] = (),
    **overrides: Any,
) -> Any:
    """Run GRPO and return the trainer (its ``state.log_history`` has the per-term rewards)."""
    import os

    from trl import GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    settings = settings or GRPOSettings()
    functions: list[Any] = [*reward_functions(reward), *extra_rewards]
    args = grpo_args(settings, output_dir, reward, **overrides)
    if extra_rewards:
        args.reward_weights = [*reward_weights(reward), *([1.0] * len(extra_rewards))]
    trainer = GRPOTrainer(
        model=str(model_dir), reward_funcs=functions, args=args, train_dataset=prompt_dataset(samples),
        rollout_func=FactGuardRollout(config, samples, settings, searchers),
    )
    trainer.train()
    return trainer
