"""Image analysis by the vision-language backend: a grounded description, visual questions,
entities, and a counterfactual check of the scene.

These tools only make sense when the model can see the pixels. On a text-only backend they return
an explicit "unavailable" result instead of asking a blind model, which would invent an answer.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from autogen_core.models import UserMessage
from pydantic import BaseModel, Field

import prompts
from m3d_agents.asking import ask
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import ParseError
from m3d_agents.media.images import PreparedImage
from m3d_agents.media.message_images import message_image
from m3d_agents.parsing import parse_model, strip_reasoning


class Entity(BaseModel):
    name: str
    type: Literal["person", "place", "landmark", "organisation", "logo", "event", "text", "other"] = "other"
    evidence: str = ""


class EntityList(BaseModel):
    entities: list[Entity] = Field(default_factory=list)


class PhysicsCheck(BaseModel):
    """The counterfactual question about the image alone: could the scene exist? No caption is asked about, so
    the answer cannot carry whether image and text fit, which is another check's question."""

    plausible: bool
    problems: list[str] = Field(default_factory=list)
    rationale: str = ""


class VisionAnalysis(BaseModel):
    tool: str
    available: bool
    text: str = ""
    data: dict[str, Any] | None = None
    error: str | None = None

    def for_agents(self) -> str:
        if not self.available:
            return f"{self.tool}: {self.error}"
        if self.error:
            return f"{self.tool}: no usable answer ({self.error})"
        return f"{self.tool}: {self.text}"


def _plain_text(text: str) -> str:
    visible = strip_reasoning(text).strip()
    if not visible:
        raise ParseError("text", "the answer is empty", text)
    return visible


async def _look(
    tool: str,
    image: PreparedImage,
    backend: Backend,
    ledger: UsageLedger,
    prompt: str,
    parse: Callable[[str], Any],
    schema: type[BaseModel] | None,
    agent: str,
) -> VisionAnalysis:
    if not backend.vision:
        return VisionAnalysis(tool=tool, available=False, error=f"unavailable: {backend.name} is text-only")
    client = backend.view(ledger, agent=agent, role=tool)
    message = UserMessage(content=[prompt, message_image(image.image)], source="user")
    answer = await ask(client, [message], parse, create_kwargs=backend.structured_args(schema) if schema else None)
    if answer.value is None:
        return VisionAnalysis(tool=tool, available=True, text=answer.text, error=answer.error)
    if isinstance(answer.value, BaseModel):
        data = answer.value.model_dump()
        return VisionAnalysis(tool=tool, available=True, text=answer.value.model_dump_json(), data=data)
    return VisionAnalysis(tool=tool, available=True, text=str(answer.value))


async def grounded_description(image: PreparedImage, backend: Backend, ledger: UsageLedger, agent: str = "tools") -> VisionAnalysis:
    return await _look("grounded_description", image, backend, ledger, prompts.load("tools/grounded_description"),
                       _plain_text, None, agent)


async def visual_question(
    image: PreparedImage, question: str, backend: Backend, ledger: UsageLedger, agent: str = "tools"
) -> VisionAnalysis:
    prompt = prompts.render("tools/visual_question", question=question.strip())
    return await _look("visual_question", image, backend, ledger, prompt, _plain_text, None, agent)


async def recognise_entities(image: PreparedImage, backend: Backend, ledger: UsageLedger, agent: str = "tools") -> VisionAnalysis:
    return await _look("image_entities", image, backend, ledger, prompts.load("tools/entities"),
                       lambda text: parse_model(text, EntityList), EntityList, agent)


async def physics_check(image: PreparedImage, backend: Backend, ledger: UsageLedger, agent: str = "tools") -> VisionAnalysis:
    return await _look("physics_check", image, backend, ledger, prompts.load("tools/physics_check"),
                       lambda text: parse_model(text, PhysicsCheck), PhysicsCheck, agent)
