"""Strategy ``factguard``: a verifier that decides whether it needs evidence, calls tools, then answers.

The loop of FactGuard (arXiv 2602.22963, §3.2-3.3, App. C): in its first turn the verifier sees
the overview frames, the transcript and the title, reasons in ``<think>`` about what is uncertain,
and either answers in ``<answer>`` or calls FactProbe (web search) and ClipScout (a 2x2 grid of one
time window) as ``<tool_call>{json}</tool_call>``; the tool desk runs the calls; in its last turn
tools are closed and it must answer. A turn that cannot be read is asked for again, then the sample
abstains with the reason. The two participants run in a fresh AutoGen group chat per sample.

The paper's verifier retrieves only through FactProbe, so it gathers no evidence up front; with
``upfront_evidence`` (ours, off in ``factguard.yaml``) it gets the run's gathered evidence in its
first turn, through the same evidence step as every other strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from autogen_core import Image as AgentImage
from autogen_core.models import LLMMessage

import prompts
from debates.groupchat.team import PolicyGroupChat
from debates.groupchat.run import run_team
from debates.strategies.factguard.config import FactGuardConfig
from debates.strategies.factguard.frames import ShownFrame, images_of, shown_frames, video_context
from debates.strategies.factguard.seats import DESK, VERIFIER, FactGuardState, ToolDesk, VerifierSeat, opening_messages
from debates.strategy import ConfiguredStrategy, RunContext, StrategyConfig, strategy
from m3d_agents.backends.config import default_cache_root
from m3d_agents.backends.factory import Backend
from debates.strategies.factguard.diagnostics import AgentTurnRecord, FactGuardDiagnostics, RecordedToolCall
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.evidence import Evidence, evidence_block
from debates.strategies.factguard.turn_format import ANSWER_STYLES
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolContext
from m3d_agents.tools.catalogue import ARGUMENTS, REGISTRY
from m3d_agents.verdict import Finding, Verdict


def answer_word(label: str, style: str) -> str:
    return next(word for word, mapped in ANSWER_STYLES[style].items() if mapped == label)


def teacher_hint(sample: Sample, config: FactGuardConfig) -> str:
    """The gold label told to a teacher model; kept apart so the SFT export can remove it."""
    if sample.gold_label is None:
        raise InputError("gold_label", f"the {config.name} configuration writes worked examples and needs the gold label")
    fake = get_taxonomy(sample.taxonomy).is_misinformation(sample.gold_label)
    return prompts.render("factguard/teacher_hint", gold=answer_word("fake" if fake else "real", config.answer_style))


@dataclass(frozen=True)
class Setup:
    backend_name: str
    backend: Backend
    frames: list[ShownFrame]
    context: ToolContext
    system: str
    first: tuple[str, str]
    """The first prompt with tools open, and the same prompt when the first turn is also the last."""
    images: list[AgentImage]
    hint: str


@strategy("factguard", diagnostics=FactGuardDiagnostics)
class FactGuard(ConfiguredStrategy[FactGuardConfig]):
    """The two-turn video agent: verifier and tool desk."""

    config_model: ClassVar[type[StrategyConfig]] = FactGuardConfig

    def setup(self, sample: Sample, ctx: RunContext, evidence: list[Evidence] | None = None) -> Setup:
        """Everything the loop starts from: the frames, the tool context, the system prompt and the first prompts,
        which show ``evidence`` (what the run gathered up front, with ``upfront_evidence``)."""
        evidence = list(evidence or [])
        config = self.config
        prepared = ctx.prepare(sample)
        backend_name, backend = ctx.backend_for(config)
        frames = shown_frames(prepared, config.overview_frames)
        described = video_context(prepared, frames, backend.vision, config.describe_frames)
        context = ToolContext(
            prepared=prepared, ledger=ctx.ledger, backend=backend, agent=DESK, searchers=dict(ctx.searchers), evidence=evidence,
            budgets={t: config.budgets.get(t) for t in config.verifier_tools},
            artifacts_dir=config.artifacts_dir or default_cache_root() / "artifacts",
            settings={"grid_max_side": config.grid_max_side, "fact_probe_top_k": config.fact_probe_top_k},
            setup=ctx.tool_setup(config),
        )
        words = list(ANSWER_STYLES[config.answer_style])
        system = prompts.render(
            "factguard/system", max_turns=config.max_turns, max_calls=config.max_calls_per_turn,
            tool_cards="\n".join(f"- {REGISTRY.card(t).name}: {REGISTRY.card(t).description()}" for t in config.verifier_tools)
            or "- none: answer directly.",
            answer_words=" or ".join(words), answer_example=words[0],
        )
        hint = teacher_hint(sample, config) if config.teacher_gold_hint else ""

        def first(question: str) -> str:
            text = prompts.render(
                "factguard/first", text=sample.text,
                transcript=(sample.video.transcript if sample.video and sample.video.transcript else "(no transcript)"),
                video_context=described, question=prompts.load(question),
            )
            return "\n\n".join(filter(None, [text, evidence_block(evidence) if evidence else "", hint]))

        return Setup(backend_name, backend, frames, context, system, (first("factguard/question_open"), first("factguard/question_last")),
                     images_of(frames) if backend.vision else [], hint)

    def opening(self, sample: Sample, ctx: RunContext) -> list[LLMMessage]:
        """The messages of the verifier's first call, as the loop sends them (training measures their length),
        without evidence gathered up front (only ``upfront_evidence`` adds it, and the paper's setting has none)."""
        setup = self.setup(sample, ctx)
        return opening_messages(setup.system, setup.first, setup.images, self.config.max_turns)

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        config = self.config
        setup = self.setup(sample, ctx, await ctx.gather_evidence(sample) if config.upfront_evidence else [])
        backend_name, backend, frames, context, hint = setup.backend_name, setup.backend, setup.frames, setup.context, setup.hint
        state = FactGuardState(config.max_turns)
        create: dict[str, Any] = {"seed": ctx.seed_for("verifier")}
        if config.temperature is not None:
            create["temperature"] = config.temperature
        if config.max_tokens is not None:
            create["max_tokens"] = config.max_tokens
        verifier = VerifierSeat(
            config, state, backend.view(ctx.ledger, agent=VERIFIER, role="verifier"), ctx.ledger, setup.system,
            setup.first, setup.images, {t: ARGUMENTS[t] for t in config.verifier_tools}, create,
        )
        desk = ToolDesk(state, context, REGISTRY, config.verifier_tools, backend.vision, config.describe_frames, config.max_turns)
        team = PolicyGroupChat([verifier, desk], state, FactGuardState.next_speakers)
        await run_team(team, state, f"Check video post {sample.id}.", ctx, f"the {config.name} check of sample {sample.id}")

        turns = state.turns
        answer = turns[-1].turn.answer if turns and turns[-1].turn is not None else None
        requested: dict[str, int] = {}
        for turn in turns:
            for call in turn.turn.tool_calls if turn.turn is not None else []:
                requested[call.name] = requested.get(call.name, 0) + 1
        diagnostics = FactGuardDiagnostics(
            turns=len(turns),
            tool_calls=requested,
            used_tools=bool(requested),
            tool_calls_answered=state.answered_calls,
            tool_refusals=dict(context.refusals),
            tool_stats=dict(context.stats),
            video_seen=bool(frames),
            format_ok=bool(turns) and all(t.turn is not None and t.turn.well_formed and t.attempts == 1 for t in turns),
            agent_turns=[
                AgentTurnRecord(
                    attempts=t.attempts, error=t.error, answer=t.turn.answer if t.turn else None,
                    tool_calls=[RecordedToolCall(name=c.name, arguments=c.arguments) for c in t.turn.tool_calls] if t.turn else [],
                    lenient=list(t.turn.lenient) if t.turn else [],
                )
                for t in turns
            ],
            stop_reason=state.stop_reason,
            teacher_hint=hint,
        )
        evidence_ids = [e.id for e in [*context.evidence, *context.retrieved]]
        rationale = turns[-1].turn.think or "" if turns and turns[-1].turn is not None else ""
        return ctx.verdict(
            sample, config, backend=backend_name, label=answer, label_taxonomy="binary", abstain_reason=state.stop_reason,
            rationale=rationale, transcript=state.transcript(), evidence_ids=evidence_ids, diagnostics=diagnostics,
            findings=[Finding(modality="video", label=answer, summary=rationale[:600], evidence_ids=evidence_ids)]
            if answer else [],
        )
