"""The policy being trained as a chat-completion client, so GRPO rollouts run the project's own FactGuard loop.

GRPO needs completions from the policy, produced by the same prompts, parser and tools as
inference. These clients render the AutoGen messages with the training template
(:mod:`~debates.strategies.factguard.training.rendering`) and sample from the policy; everything
above them (the seats, the tool desk, the ledger) is unchanged. A client over a vision-language
model declares vision, so the loop attaches the overview frames and the ClipScout grid as images,
exactly as it does at inference; over a text model, images are ``[image]``.

Two ways to sample:

* :class:`HFPolicyClient`: ``generate`` on the policy in this process; the turns that the rollouts
  of a step ask for at the same time are gathered into one batched ``generate`` call (left padding,
  each row's images, each row cut at its own end), up to ``batch_size`` rows;
* :class:`VLLMPolicyClient`: a vLLM server started with ``trl vllm-serve``, whose weights TRL
  updates before each rollout batch (TRL's vLLM server mode); the server renders the same template.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from debates.strategies.factguard.training.chat_template import TrainingTemplate
from m3d_agents.errors import BackendError
from debates.strategies.factguard.training.rendering import TOKEN_FIELDS, Rendered, is_vision, llm_template_messages, render, text_only, tokenizer_of


class PolicyClient(ChatCompletionClient):
    """What both policy clients share: the rendering, the accounting, the capabilities."""

    def __init__(self, processing_class: Any, template: TrainingTemplate, max_new_tokens: int = 768, temperature: float = 1.0,
                 context_tokens: int = 32768) -> None:
        self.processing_class = processing_class
        self.tokenizer = tokenizer_of(processing_class)
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.context_tokens = context_tokens
        self.vision = is_vision(processing_class)
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def count(self, prompt: int, completion: int) -> RequestUsage:
        usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)
        self._usage = RequestUsage(prompt_tokens=self._usage.prompt_tokens + prompt,
                                   completion_tokens=self._usage.completion_tokens + completion)
        return usage

    def settings(self, extra_create_args: Mapping[str, Any]) -> tuple[float, int]:
        temperature = float(extra_create_args.get("temperature", self.temperature))
        return temperature, min(int(extra_create_args.get("max_tokens") or self.max_new_tokens), self.max_new_tokens)

    @contextlib.asynccontextmanager
    async def rollout(self) -> AsyncIterator[None]:
        """Held by each rollout while it runs: a batching client waits for the rollouts still running before it
        generates; the others need nothing."""
        yield

    def prompt_ids(self, messages: Sequence[LLMMessage]) -> list[int]:
        return render(self.processing_class, self.template, llm_template_messages(messages), add_generation_prompt=True).ids

    async def create_stream(
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[Union[str, CreateResult], None]:
        yield await self.create(messages, **kwargs)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return len(self.prompt_ids(messages))

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return max(0, self.context_tokens - self.count_tokens(messages))

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(vision=self.vision, function_calling=False, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(vision=self.vision, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN,
                         structured_output=False)


class PromptRenderer(PolicyClient):
    """The policy's rendering without a model: what measuring a prompt's length needs, before the model is loaded."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        raise BackendError("the prompt renderer measures prompts; it has no model to answer with")


@dataclass(eq=False)
class Turn:
    """One model turn a rollout waits for: its rendered prompt, its sampling settings and where its answer goes."""

    prompt: Rendered
    temperature: float
    limit: int
    answer: asyncio.Future[CreateResult]


class HFPolicyClient(PolicyClient):
    """Samples with ``generate`` on the policy model (already unwrapped from any distributed wrapper).

    Turns are gathered: a turn asked for waits until every rollout still running (see :meth:`rollout`)
    has asked for its own, or ``batch_size`` turns wait, and then they are generated in one call. The
    rows are left-padded, each carries its own images, and each is cut at its own end-of-turn token, so
    a turn's tokens are those it would get alone (at temperature 0, exactly those). ``batch_size`` 1 is
    the sequential path: each turn is generated when it is asked for.
    """

    def __init__(self, model: Any, processing_class: Any, template: TrainingTemplate, max_new_tokens: int = 768,
                 temperature: float = 1.0, batch_size: int = 1) -> None:
        context = int(getattr(model.config.get_text_config(), "max_position_embeddings", 32768))
        super().__init__(processing_class, template, max_new_tokens, temperature, context)
        self.model = model
        self.batch_size = batch_size
        self.batches: list[int] = []
        """The rows of each ``generate`` call made, in order (what the benchmark and the tests read)."""
        self._waiting: list[Turn] = []
        self._running = 0
        ends = getattr(model.generation_config, "eos_token_id", None)
        ends = self.tokenizer.eos_token_id if ends is None else ends
        self._ends = {int(e) for e in (ends if isinstance(ends, (list, tuple)) else [ends]) if e is not None}

    @contextlib.asynccontextmanager
    async def rollout(self) -> AsyncIterator[None]:
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            self._generate_ready()

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> CreateResult:
        prompt = render(self.processing_class, self.template, llm_template_messages(messages), add_generation_prompt=True)
        temperature, limit = self.settings(extra_create_args)
        turn = Turn(prompt, temperature, limit, asyncio.get_running_loop().create_future())
        self._waiting.append(turn)
        self._generate_ready()
        try:
            return await turn.answer
        finally:
            if turn in self._waiting:  # given up on (its deadline, a cancelled rollout): no row is generated for it
                self._waiting.remove(turn)

    def _generate_ready(self) -> None:
        """Generate the waiting turns while a batch is full or no running rollout can add to it."""
        while self._waiting and len(self._waiting) >= min(self.batch_size, max(self._running, 1)):
            first = self._waiting[0]
            batch = [t for t in self._waiting if (t.temperature, t.limit) == (first.temperature, first.limit)][: self.batch_size]
            self._waiting = [t for t in self._waiting if t not in batch]
            try:
                answers = self._generate(batch)
            except Exception as exc:  # every turn of the batch gets the error, none is left waiting
                for turn in batch:
                    if not turn.answer.done():
                        turn.answer.set_exception(exc)
                continue
            for turn, answer in zip(batch, answers):
                if not turn.answer.done():
                    turn.answer.set_result(answer)

    def _generate(self, batch: Sequence[Turn]) -> list[CreateResult]:
        import torch

        device = self.model.device
        width = max(len(t.prompt.ids) for t in batch)
        pad = self.tokenizer.pad_token_id
        inputs = torch.full((len(batch), width), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, turn in enumerate(batch):
            inputs[row, width - len(turn.prompt.ids):] = torch.tensor(turn.prompt.ids)
            attention[row, width - len(turn.prompt.ids):] = 1
        features: dict[str, Any] = {}
        for name in dict.fromkeys(k for t in batch for k in t.prompt.features):
            if name in TOKEN_FIELDS:
                column = torch.zeros((len(batch), width), dtype=torch.long)
                for row, turn in enumerate(batch):
                    if name in turn.prompt.features:
                        column[row, width - len(turn.prompt.ids):] = turn.prompt.features[name]
                features[name] = column.to(device)
            else:  # per-image tensors, in row order: the model reads them in the order of the placeholders
                features[name] = torch.cat([t.prompt.features[name] for t in batch if name in t.prompt.features]).to(device)
        if "pixel_values" in features:
            features["pixel_values"] = features["pixel_values"].to(self.model.dtype)
        temperature, limit = batch[0].temperature, batch[0].limit
        # Sampling from the policy's own distribution at the temperature, whatever filters the model's generation
        # config ships (Qwen2.5-VL-Instruct's top_k 1 would make every rollout of a group alike); 0: greedy.
        sampling = (dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0, repetition_penalty=1.0) if temperature > 0
                    else dict(do_sample=False, repetition_penalty=1.0))
        training = self.model.training
        self.model.eval()  # generation uses the KV cache, which gradient checkpointing turns off in training mode
        try:
            with torch.no_grad():
                output = self.model.generate(
                    input_ids=inputs.to(device), attention_mask=attention.to(device), max_new_tokens=limit, use_cache=True,
                    pad_token_id=pad, **sampling, **features,
                )
        finally:
            self.model.train(training)
        self.batches.append(len(batch))
        answers = []
        for row, turn in enumerate(batch):
            new = output[row, width:].tolist()
            end = next((i for i, token in enumerate(new) if token in self._ends), None)
            new = new if end is None else new[: end + 1]
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            answers.append(CreateResult(finish_reason="stop", content=text, usage=self.count(len(turn.prompt.ids), len(new)),
                                        cached=False))
        return answers


ChatFunction = Callable[..., dict[str, Any]]
"""TRL's ``VLLMClient.chat``: conversations in, ``prompt_ids`` and ``completion_ids`` out."""


class VLLMPolicyClient(PolicyClient):
    """Samples from a vLLM server through TRL's client; images travel inside the messages."""

    def __init__(self, chat: ChatFunction, processing_class: Any, template: TrainingTemplate, max_new_tokens: int = 768,
                 temperature: float = 1.0) -> None:
        super().__init__(processing_class, template, max_new_tokens, temperature)
        self.chat = chat

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> CreateResult:
        conversation = llm_template_messages(messages)
        if not self.vision:
            conversation = text_only(conversation)
        temperature, limit = self.settings(extra_create_args)
        answer = await asyncio.to_thread(
            self.chat, [conversation], n=1, temperature=temperature, max_tokens=limit, logprobs=None,
            chat_template=self.template.text,
        )
        new = list(answer["completion_ids"][0])
        prompt = len(answer["prompt_ids"][0])
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return CreateResult(finish_reason="stop", content=text, usage=self.count(prompt, len(new)), cached=False)
