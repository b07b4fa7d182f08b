"""The response cache: AutoGen's, plus several choices per request.

Why a subclass: AutoGen's cache wraps a client and forwards only ``create``, so a cached backend
would hide that its client can answer several choices in one request
(:mod:`m3d_agents.backends.choices`), and a search would pay for its shared prompt once per
choice. The n choices of one request are cached together, under the request and its ``n``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, RequestUsage
from autogen_ext.models.cache import ChatCompletionCache
from pydantic import BaseModel

from m3d_agents.backends.choices import Choices, can_sample_choices


class ResponseCache(ChatCompletionCache):
    @property
    def samples_choices(self) -> bool:
        return can_sample_choices(self.client)

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """The stored choices of this request, or the client's (stored when it returned all ``n``).

        The request's usage is kept on the first stored choice, so a hit reports what the request cost."""
        stored, key = self._check_cache(messages, [], json_output, {**extra_create_args, "n": n})
        if isinstance(stored, list) and stored and all(isinstance(item, CreateResult) for item in stored):
            results = [item for item in stored if isinstance(item, CreateResult)]
            usage = RequestUsage(prompt_tokens=sum(r.usage.prompt_tokens for r in results),
                                 completion_tokens=sum(r.usage.completion_tokens for r in results))
            zero = RequestUsage(prompt_tokens=0, completion_tokens=0)
            return Choices([r.model_copy(update={"cached": True, "usage": zero}) for r in results], usage, cached=True)
        client: Any = self.client
        choices: Choices = await client.create_choices(
            messages, n, json_output=json_output, extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        )
        if len(choices.results) == n:
            carried = [r.model_copy(update={"usage": choices.usage if i == 0 else RequestUsage(prompt_tokens=0, completion_tokens=0)})
                       for i, r in enumerate(choices.results)]
            self.store.set(key, list(carried))
        return choices
