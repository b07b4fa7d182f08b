"""GRPO rollouts: the FactGuard loop run per prompt with the policy as its model (TRL's ``rollout_func``).

Each rollout runs :class:`~debates.strategies.factguard.FactGuard` on one sample with the policy
being trained as its backend: the same prompts, parser, tools, budgets and evidence as inference.
The conversation it recorded is rendered with the training template; the policy's own turns are
trained and everything else (tool results, the instructions between turns) is masked out through
TRL's ``env_mask``. On a vision-language policy the overview frames and the ClipScout grid are
images in the conversation, and their features are kept for the forward passes
(:mod:`~debates.strategies.factguard.training.rollout_images`). Rollouts run in the training run's
session, so FactProbe searches through its retrieval (``--retrieval live|record|replay``, with its
evidence policy) and a run can replay recorded results offline.

The rollouts of a step run concurrently. On HF ``generate`` the policy client gathers the turns they
ask for at the same time into one batched call, up to ``rollout_batch_size`` rows (1: one rollout at
a time); on a vLLM server they are sent at once and the server batches them.

TRL quirks this relies on (1.16; the rollout hook is experimental): the prompts handed to the
rollout are already repeated ``num_generations`` times, so it returns one completion per prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from debates.config_loader import with_overrides
from debates.session import RunSession, derive_seed, run_strategy
from debates.strategies.factguard.config import FactGuardConfig
from debates.strategies.factguard.training.chat_template import TrainingTemplate
from debates.strategies.factguard.training.policy_clients import HFPolicyClient, PolicyClient, VLLMPolicyClient
from debates.strategies.factguard.training.rendering import Rendered, recorded_template_messages, render, text_of
from debates.strategies.factguard.training.rollout_images import RolloutImages
from debates.strategies.factguard.training.trajectories import binary
from m3d_agents.backends.config import BackendConfig, LocalServerSettings
from m3d_agents.backends.factory import Backend, BackendPool
from m3d_agents.backends.metering import UsageLedger
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.sample import Sample

POLICY = "policy"
GENERATE_DEADLINE_S = 86400.0
"""A policy turn's deadline: generation runs in this process, where no server can hang, and a turn may wait for
a whole batch of others, so the backend's network deadline does not apply."""
VLLM_CONCURRENCY = 64


def completion_span(prompt: Rendered, full: Rendered) -> tuple[list[int], list[int]]:
    """The completion ids after the prompt and the mask of the model's tokens in them, cut after its last token."""
    if full.ids[: len(prompt.ids)] != prompt.ids:
        raise RuntimeError("the chat template does not render the first prompt as a prefix of the conversation")
    completion, mask = full.ids[len(prompt.ids):], full.mask[len(prompt.ids):]
    last = max((i for i, m in enumerate(mask) if m), default=len(completion) - 1)
    return completion[: last + 1], mask[: last + 1]


def trained_config(config: FactGuardConfig) -> FactGuardConfig:
    """The configuration rollouts run: no re-asks (a malformed turn is what the format reward scores) and no frame OCR
    (the policy reads the frames themselves)."""
    trained = with_overrides(config, parse_retries=0, describe_frames=False)
    assert isinstance(trained, FactGuardConfig)
    return trained


@dataclass
class RolloutStats:
    """What the latest batch of rollouts held, per rollout: the figures the benchmark prints and tests check."""

    mask_tokens: list[int] = field(default_factory=list)
    images: list[int] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    """The text of every tool result the policy read."""
    batches: list[int] = field(default_factory=list)
    """The rows of each HF ``generate`` call, in order (empty on a vLLM server)."""


class FactGuardRollout:
    """TRL's ``rollout_func``: the FactGuard loop per prompt, with the policy as its model."""

    def __init__(self, config: FactGuardConfig, samples: Sequence[Sample], template: TrainingTemplate, max_new_tokens: int,
                 temperature: float, seed: int = 0, session: RunSession | None = None,
                 images: RolloutImages | None = None, batch_size: int = 1) -> None:
        """``session`` is the training run's (open, with ``backend="policy"``): its pool takes the policy
        as the ``policy`` backend at every step; None: a session of this configuration with retrieval off.
        ``batch_size``: the most turns one HF ``generate`` call takes (1: one rollout at a time)."""
        trained = trained_config(config)
        self.config: FactGuardConfig = trained
        self.samples = {s.id: s for s in samples}
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.batch_size = batch_size
        self.loop = asyncio.new_event_loop()
        if session is None:
            session = RunSession(trained, BackendPool(), backend=POLICY, retrieval="off")
            self.loop.run_until_complete(session.open())
        self.session = session
        self.images = images if images is not None else RolloutImages()
        self.seeds = (derive_seed(seed, "rollout", i) for i in itertools.count())
        self.stats = RolloutStats()
        self._vllm: Any = None

    @contextlib.contextmanager
    def policy(self, trainer: Any) -> Iterator[PolicyClient]:
        """The policy as a chat client: the vLLM server's when the run has one, else ``generate`` on the model
        gathered from its shards (TRL's context for ZeRO-3)."""
        processing_class = trainer.processing_class
        if getattr(trainer, "use_vllm", False):
            trainer.accelerator.wait_for_everyone()  # the main process has pushed this step's weights to the server
            if self._vllm is None:
                self._vllm = vllm_chat(trainer)
            yield VLLMPolicyClient(self._vllm, processing_class, self.template, self.max_new_tokens, self.temperature)
            return
        from trl.models import unwrap_model_for_generation

        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                         gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                         gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs) as model:
            yield HFPolicyClient(model, processing_class, self.template, self.max_new_tokens, self.temperature, self.batch_size)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        with self.policy(trainer) as client:
            return self.collect([self.samples[str(prompt)] for prompt in prompts], trainer.processing_class, client)

    def collect(self, samples: Sequence[Sample], processing_class: Any, client: PolicyClient) -> dict[str, Any]:
        """Run one rollout per sample with ``client`` as the policy, all at once, and return TRL's rollout fields."""
        self.images.clear()
        self.stats = RolloutStats()
        calls = VLLM_CONCURRENCY if isinstance(client, VLLMPolicyClient) else self.batch_size
        # Every rollout may ask at once: the client, not the backend's gate, decides how many turns are generated together.
        config = BackendConfig(kind="local", cache=False, concurrency=calls, deadline_s=GENERATE_DEADLINE_S,
                               local=LocalServerSettings(slots=calls))
        self.session.pool.add(Backend(POLICY, config, client))
        finished = self.loop.run_until_complete(self.run_all(samples, client))
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "outcome": []}
        for sample, (verdict, ledger) in zip(samples, finished):
            verifier = [e for e in ledger.exchanges if e.agent == "verifier"]
            first = recorded_template_messages(verifier[0].messages, ledger.images)
            last = recorded_template_messages([*verifier[-1].messages, {"role": "assistant", "content": verifier[-1].completion}],
                                              ledger.images)
            prompt = render(processing_class, self.template, first, add_generation_prompt=True)
            full = render(processing_class, self.template, last, with_mask=True)
            completion, mask = completion_span(prompt, full)
            self.template.require_tokens(mask, f"the rollout of sample {sample.id}")
            self.images.keep(prompt.ids + completion, full.features, len(full.images))
            self.stats.mask_tokens.append(sum(mask))
            self.stats.images.append(len(full.images))
            self.stats.observations += [text_of(m["content"]) for m in last[len(first):] if m["role"] == "user"]
            out["prompt_ids"].append(prompt.ids)
            out["completion_ids"].append(completion)
            out["env_mask"].append(mask)
            checked = verdict.diagnostics if isinstance(verdict.diagnostics, FactGuardDiagnostics) else None
            out["outcome"].append({
                "predicted": binary(verdict.label, verdict.taxonomy), "gold": binary(sample.gold_label, sample.taxonomy),
                "well_formed": checked is not None and checked.format_ok, "used_tool": checked is not None and checked.used_tools,
                "tool_answered": checked is not None and checked.tool_answered,
            })
        if isinstance(client, HFPolicyClient):
            self.stats.batches = list(client.batches)
        return {**out, "logprobs": None}

    async def run_all(self, samples: Sequence[Sample], client: PolicyClient) -> list[tuple[Any, UsageLedger]]:
        return list(await asyncio.gather(*(self.run_one(sample, client) for sample in samples)))

    async def run_one(self, sample: Sample, client: PolicyClient) -> tuple[Any, UsageLedger]:
        """The trained configuration (its retries and frame OCR off) on ``sample``, in the run session's context."""
        ledger = UsageLedger(record_messages=True)
        async with client.rollout():
            verdict = await run_strategy(self.config, sample, self.session.context(seed=next(self.seeds), ledger=ledger))
        return verdict, ledger

    def close(self) -> None:
        self.loop.run_until_complete(self.session.close())
        self.loop.close()


def vllm_chat(trainer: Any) -> Any:
    """TRL's vLLM client's ``chat``: the main process's own, another process's a client of the same server."""
    generation = trainer.vllm_generation
    client = getattr(generation, "vllm_client", None)
    if client is None:
        from trl.generation.vllm_client import VLLMClient

        client = VLLMClient(base_url=trainer.args.vllm_server_base_url, connection_timeout=trainer.args.vllm_server_timeout)
    return client.chat
