"""Critics that give a best-of-N candidate its critique score q, each grounded in its own evidence.

- text: a critic given a logic-consistency check of the claim (:mod:`debates.turns.logic_check`);
- image: a critic given the forgery tool's report on each image;
- cross-modal: none by default; ``critique_cross_modal`` switches one on (the paper's ablation).

The image critic's forgery tool: a learned detector where the run names its weights
(``tools: {learned_detector: {model: PATH}}`` or ``M3D_FORGERY_MODEL``; AgentM3D runs PatchCraft,
paper line 373), else a replaceable callable, by default the fused CPU forensics of
:mod:`m3d_agents.tools` (ELA, JPEG, EXIF, noise), set with :func:`use_forgery_report`; with none the
critic is told plainly that no analysis exists. A run's departures say which one the critic read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable, Protocol

from autogen_core.models import SystemMessage, UserMessage

import prompts
from debates.debate_engine.config import BestOfNSettings
from debates.turns.logic_check import logic_consistency_report
from debates.turns.rewards import Score
from debates.turns.scoring import unit_from_ten_point
from debates.debate_engine.turn_policy import TurnContext
from m3d_agents.media.post_content import described_images, user_content
from m3d_agents.asking import ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.media.images import PreparedImage
from m3d_agents.grammars import score_line, ten_point_verdict
from m3d_agents.parsing import parse_ten_point_score, parse_unit_score
from m3d_agents.registry import Registry
from m3d_agents.tools.image_in_words import forensic_describer
from m3d_agents.tools.forensics.learned import NAME as LEARNED
from m3d_agents.isolation import ItemLost
from m3d_agents.tools.forensics.learned import analyse_learned, configured_path

ForgeryReport = Callable[[PreparedImage], str]


def no_forensic_tool(image: PreparedImage) -> str:
    return "No forensic tool is configured, so there is no forgery analysis of this image."


_forgery_report: ForgeryReport = forensic_describer


def use_forgery_report(report: ForgeryReport | None) -> None:
    """Set the forgery tool whose report the image critic receives (default: the fused CPU forensics;
    None: no tool, and the critic is told so)."""
    global _forgery_report
    _forgery_report = report or no_forensic_tool


def current_forgery_report() -> ForgeryReport:
    return _forgery_report


class Critic(Protocol):
    name: str

    async def critique(self, client: MeteredClient, candidate: str, context: TurnContext, retries: int) -> Score: ...


async def _ask_critic(
    client: MeteredClient, name: str, template: str, context: TurnContext, retries: int, with_images: bool, prose: bool,
    **values: str,
) -> Score:
    """One critique, in the seat's critic format: a bare score in [0, 1] with anchors 0, 0.5 and 1
    (AgentM3D's critics), or a short critique ending in a 1-10 score (``critic_format: prose``).

    Each template takes only its critic's inputs: the text critic never sees the image, the image
    critic never sees the caption (on a text-only backend it reads the shared description instead).
    """
    prepared = context.prepared
    candidate = values.pop("candidate")
    task = prompts.render(
        template, text=prepared.sample.text, image_context=described_images(prepared, context.vision, descriptions=False),
        candidate=_CANDIDATE, **values,
    )
    fixed, varying = split_before_candidate(task)
    parse: Callable[[str], float] = parse_ten_point_score if prose else parse_unit_score
    grammar = ten_point_verdict("The score is") if prose else score_line("")
    answer = await ask(
        client.with_role("critique", agent=name),
        [
            SystemMessage(content=prompts.load("turns/critic_system" if prose else "turns/critic_score_system")),
            UserMessage(content=user_content(fixed, prepared, context.vision and with_images,
                                             then=varying.replace(_CANDIDATE, candidate)), source="user"),
        ],
        parse,
        retries=retries,
        create_kwargs={"extra_create_args": {"temperature": 0.0, **grammar.create_args()}},
    )
    if answer.value is None:
        return Score(None, answer.error)
    return Score(unit_from_ten_point(answer.value) if prose else answer.value)


_CANDIDATE = "\x00candidate\x00"


def split_before_candidate(task: str) -> tuple[str, str]:
    """A critic's task cut at the paragraph that quotes the candidate: every critique of a turn shares
    what comes before (the post, the tool's report), and the images are placed there, not after the
    candidate, so a server's prefix cache reuses them. The text itself is unchanged."""
    cut = task.rfind("\n\n", 0, task.index(_CANDIDATE))
    cut = cut if cut >= 0 else task.index(_CANDIDATE)
    return task[:cut], task[cut:]


class TextCritic:
    name = "text_critic"

    def __init__(self, prose: bool = False) -> None:
        self.prose = prose

    async def critique(self, client: MeteredClient, candidate: str, context: TurnContext, retries: int) -> Score:
        report = await logic_consistency_report(client, context, retries)
        return await _ask_critic(client, self.name, "turns/critic_text", context, retries, False, self.prose,
                                 report=report, candidate=candidate)


def learned_detector_report(model: str | Path, positive_label: str | None = None) -> ForgeryReport:
    """The learned detector's report on an image, as the critic reads it."""
    def report(image: PreparedImage) -> str:
        try:
            return analyse_learned(image, model, positive_label).for_agents()
        except ItemLost as lost:
            return f"learned_detector: unavailable: {lost.line}"

    return report


def run_forgery_report(context: TurnContext) -> ForgeryReport:
    """The forgery tool of this run: the learned detector when the run names its weights, else the set one."""
    binding = context.tools.binding(LEARNED) if context.tools is not None else None
    model = configured_path(binding.model if binding is not None else None)
    if model is None:
        return current_forgery_report()
    return learned_detector_report(model, binding.positive_label if binding is not None else None)


_FORGERY_KEY = "forgery_report"


class ImageCritic:
    name = "image_critic"

    def __init__(self, forgery_report: ForgeryReport | None = None, prose: bool = False) -> None:
        self._forgery_report = forgery_report
        self.prose = prose

    async def report(self, context: TurnContext) -> str:
        """The forgery report on the post's images, made once per sample (a learned detector is a
        network forward pass, not to be repeated for every candidate) and shared by its critiques."""
        turn_state = context.turn_state
        async with turn_state.lock(_FORGERY_KEY):
            if _FORGERY_KEY not in turn_state.cache:
                tool = self._forgery_report or run_forgery_report(context)
                images = context.prepared.images
                turn_state.cache[_FORGERY_KEY] = (
                    "\n".join([f"Image {i}: {await asyncio.to_thread(tool, image)}" for i, image in enumerate(images, start=1)])
                    if images else "The post has no image to analyse."
                )
            return str(turn_state.cache[_FORGERY_KEY])

    async def critique(self, client: MeteredClient, candidate: str, context: TurnContext, retries: int) -> Score:
        report = await self.report(context)
        return await _ask_critic(client, self.name, "turns/critic_image", context, retries, True, self.prose,
                                 report=report, candidate=candidate)


class CrossModalCritic:
    name = "cross_modal_critic"

    def __init__(self, prose: bool = False) -> None:
        self.prose = prose

    async def critique(self, client: MeteredClient, candidate: str, context: TurnContext, retries: int) -> Score:
        return await _ask_critic(client, self.name, "turns/critic_cross_modal", context, retries, True, self.prose,
                                 candidate=candidate)


CriticFactory = Callable[[BestOfNSettings, "ForgeryReport | None"], "Critic | None"]
CRITICS: Registry[CriticFactory] = Registry("critic")
"""Critics by the seat role they critique; a factory may return None when the settings switch it off."""
CRITICS.add("text", lambda config, report: TextCritic(config.critic_format == "prose"), "a logic-consistency check of the claim")
CRITICS.add("image", lambda config, report: ImageCritic(report, config.critic_format == "prose"), "the forgery tool's report on each image")
CRITICS.add(
    "cross_modal",
    lambda config, report: CrossModalCritic(config.critic_format == "prose") if config.critique_cross_modal else None,
    "off unless critique_cross_modal (the paper's ablation)",
)


def critic_for(role: str, config: BestOfNSettings, forgery_report: ForgeryReport | None = None) -> Critic | None:
    """The critic of a seat's role, or None where the config or the role has none (then s = u)."""
    if not config.critique or role not in CRITICS:
        return None
    return CRITICS.get(role)(config, forgery_report)
