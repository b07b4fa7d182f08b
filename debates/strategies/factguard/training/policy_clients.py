"""The policy being trained as a chat-completion client, so GRPO rollouts run the project's own FactGuard loop.

GRPO needs completions from the policy, produced by the same prompts, parser and tools as
inference. These clients render the AutoGen messages with the training template
(:mod:`~debates.strategies.factguard.training.rendering`) and sample from the policy; everything
above them (the seats, the tool desk, the ledger) is unchanged. A client over a vision-language
model declares vision, so the loop attaches the overview frames and the ClipScout grid as images,
exactly as it does at inference; over a text model, images are ``[image]``.

Two ways to sample:

* :class:`HFPolicyClient`: ``generate`` on the policy in this process (one rollout at a time);
* :class:`VLLMPolicyClient`: a vLLM server started with ``trl vllm-serve``, whose weights TRL
  updates before each rollout batch (TRL's vLLM server mode); the server renders the same template.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, Callable, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from debates.strategies.factguard.training.chat_template import TrainingTemplate
from m3d_agents.errors import BackendError
from debates.strategies.factguard.training.rendering import is_vision, llm_template_messages, render, text_only, tokenizer_of


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


class HFPolicyClient(PolicyClient):
    """Samples with ``generate`` on the policy model (already unwrapped from any distributed wrapper)."""

    def __init__(self, model: Any, processing_class: Any, template: TrainingTemplate, max_new_tokens: int = 768,
                 temperature: float = 1.0) -> None:
        context = int(getattr(model.config.get_text_config(), "max_position_embeddings", 32768))
        super().__init__(processing_class, template, max_new_tokens, temperature, context)
        self.model = model

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
        import torch

        rendered = render(self.processing_class, self.template, llm_template_messages(messages), add_generation_prompt=True)
        device = self.model.device
        inputs = torch.tensor([rendered.ids], device=device)
        features = {k: v.unsqueeze(0).to(device) if k in ("mm_token_type_ids", "token_type_ids") else v.to(device)
                    for k, v in rendered.features.items()}
        if "pixel_values" in features:
            features["pixel_values"] = features["pixel_values"].to(self.model.dtype)
        temperature, limit = self.settings(extra_create_args)
        training = self.model.training
        self.model.eval()  # generation uses the KV cache, which gradient checkpointing turns off in training mode
        try:
            with torch.no_grad():
                output = self.model.generate(
                    input_ids=inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=limit, use_cache=True,
                    do_sample=temperature > 0, temperature=max(temperature, 1e-5), pad_token_id=self.tokenizer.pad_token_id,
                    **features,
                )
        finally:
            self.model.train(training)
        new = output[0, len(rendered.ids):].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return CreateResult(finish_reason="stop", content=text, usage=self.count(len(rendered.ids), len(new)), cached=False)


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
