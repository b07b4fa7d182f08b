"""A chat-completion client over a local transformers model, so training rollouts run the project's own loop.

GRPO needs completions from the policy being trained, produced by the same prompts, parser and
tools as inference. This client renders the AutoGen messages with the tokenizer's chat template and
samples from the model in process; everything above it (the FactGuard seats, the desk, the
ledger) is unchanged. Text models only: images reach it as ``[image]``.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelFamily, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.recording import chat_messages


def template_messages(messages: Sequence[LLMMessage]) -> list[dict[str, Any]]:
    """Chat messages as a chat template reads them (role and content only)."""
    return [{"role": m["role"], "content": m["content"]} for m in chat_messages(messages, {})]


class HFChatClient(ChatCompletionClient):
    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int = 768, temperature: float = 1.0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def prompt_ids(self, messages: Sequence[LLMMessage]) -> list[int]:
        rendered = self.tokenizer.apply_chat_template(template_messages(messages), add_generation_prompt=True, tokenize=True,
                                                      return_dict=True)
        return list(rendered["input_ids"])

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

        ids = self.prompt_ids(messages)
        inputs = torch.tensor([ids], device=self.model.device)
        temperature = float(extra_create_args.get("temperature", self.temperature))
        training = self.model.training
        self.model.eval()  # generation uses the KV cache, which gradient checkpointing turns off in training mode
        try:
            with torch.no_grad():
                output = self.model.generate(
                    inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=self.max_new_tokens, use_cache=True,
                    do_sample=temperature > 0, temperature=max(temperature, 1e-5), pad_token_id=self.tokenizer.pad_token_id,
                )
        finally:
            self.model.train(training)
        new = output[0, len(ids):].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        usage = RequestUsage(prompt_tokens=len(ids), completion_tokens=len(new))
        self._usage = RequestUsage(prompt_tokens=self._usage.prompt_tokens + len(ids),
                                   completion_tokens=self._usage.completion_tokens + len(new))
        return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)

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
        return max(0, int(getattr(self.model.config, "max_position_embeddings", 32768)) - self.count_tokens(messages))

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(vision=False, function_calling=False, json_output=False)

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN,
                         structured_output=False)
