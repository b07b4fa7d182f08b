"""The simplest working configuration: one agent looks at the post and answers.

It is the baseline that every debate is compared against, and the smallest end-to-end path
through sample validation, a real backend, structured output, parsing and accounting.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel, ConfigDict, Field, create_model

import prompts
from m3d_agents.fence import render_prompt
from m3d_agents.media.post_content import image_context, user_content
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence, evidence_block
from m3d_agents.media.images import PreparedSample
from m3d_agents.verdict import TranscriptTurn
from m3d_agents.labels import Taxonomy
from m3d_agents.parsing import parse_model_setting_aside_confidence
from m3d_agents.tools.image_in_words import enable_image_describers


def answer_schema(taxonomy: Taxonomy) -> type[BaseModel]:
    """A JSON schema whose ``label`` is an enum of the taxonomy, so constrained decoding can only emit valid labels."""
    return _schema_for(taxonomy.name, tuple(taxonomy.labels))


@lru_cache(maxsize=None)
def _schema_for(name: str, labels: tuple[str, ...]) -> type[BaseModel]:
    label_type = Literal[labels]  # type: ignore[valid-type]
    return create_model(
        f"CheckAnswer_{name}",
        __config__=ConfigDict(extra="forbid"),
        rationale=(str, Field(..., max_length=600)),
        label=(label_type, ...),
        confidence=(float, Field(..., ge=0.0, le=1.0)),
    )


@dataclass(frozen=True)
class CheckedPost:
    """A readable checker answer: the label, the reasons given and the confidence stated (if valid)."""

    label: str
    rationale: str
    confidence: float | None


CheckerAnswer = Answer[tuple[BaseModel, "float | None"]]


def checked(answer: CheckerAnswer | None) -> CheckedPost | None:
    """The readable content of a checker's answer; None when it could not be read."""
    if answer is None or answer.value is None:
        return None
    value, confidence = answer.value
    data = value.model_dump()
    return CheckedPost(label=str(data["label"]), rationale=str(data["rationale"]), confidence=confidence)


class CheckerAgent(BaseChatAgent):
    def __init__(
        self,
        name: str,
        backend: Backend,
        ledger: UsageLedger,
        prepared: PreparedSample,
        taxonomy: Taxonomy,
        retries: int = 2,
        sampling: dict[str, object] | None = None,
        evidence: Sequence[Evidence] = (),
    ) -> None:
        super().__init__(name, description="Checks one post and answers with a label and a confidence.")
        enable_image_describers()
        self._client = backend.view(ledger, agent=name, role="checker")
        self._backend = backend
        self._ledger = ledger
        self._prepared = prepared
        self._taxonomy = taxonomy
        self._retries = retries
        self._sampling = dict(sampling or {})
        self._evidence = list(evidence)
        self.answer: CheckerAnswer | None = None

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        schema = answer_schema(self._taxonomy)
        task = prompts.render(
            "checker/task",
            text=self._prepared.sample.text,
            image_context=image_context(self._prepared, self._backend.vision),
            evidence=evidence_block(self._evidence),
            labels=", ".join(self._taxonomy.labels),
        )
        llm_messages: list[LLMMessage] = [
            SystemMessage(content=render_prompt("checker/system")),
            UserMessage(content=user_content(task, self._prepared, self._backend.vision), source="user"),
        ]

        self.answer = await ask(
            self._client,
            llm_messages,
            lambda text: parse_model_setting_aside_confidence(text, schema),
            retries=self._retries,
            create_kwargs=self._create_kwargs(schema),
            on_retry=self._ledger.count_parse_retry,
        )
        post = checked(self.answer)
        metadata = {"stance": post.label if post else ""}
        if self.answer.error:
            metadata["parse_error"] = self.answer.error
        return Response(chat_message=TextMessage(content=self.answer.text, source=self.name, metadata=metadata))

    def _create_kwargs(self, schema: type[BaseModel]) -> dict[str, object]:
        """The structured-output arguments, plus any sampling settings (temperature, seed) given."""
        kwargs = self._backend.structured_args(schema)
        if self._sampling:
            extra = dict(kwargs.get("extra_create_args", {}))
            kwargs = {**kwargs, "extra_create_args": {**extra, **self._sampling}}
        return kwargs

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.answer = None


def checker_turn(name: str, answer: CheckerAnswer, round: int = 1) -> TranscriptTurn:
    """The transcript turn of one checker answer, with its label when it could be read."""
    post = checked(answer)
    return TranscriptTurn(
        speaker=name, role="checker", round=round, text=answer.text, stance=post.label if post else None,
        parse_error=answer.error,
    )
