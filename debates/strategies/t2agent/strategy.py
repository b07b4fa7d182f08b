"""Strategy ``t2agent``: Monte Carlo tree search over forgery-source subtasks with tool actions (T2Agent).

Flow for one post: priors per subtask (one model call, or uniform/random), then iterations of
the search in :mod:`~debates.strategies.t2agent.search` until a confident fake stops it, every
subtask is confirmed real, or K iterations are spent; then the decision of
:mod:`~debates.strategies.t2agent.fusion` (eqs. 4–6), or an abstention with its reason.

Why a strategy of its own that calls the models directly, rather than seats in a group chat:
the search is not a conversation. Its calls (n concurrent steps, their scores, tools) never read
each other's messages, and a chat turn would have to hide a whole iteration in one message. The
run context already shares what the chat would have given: ``ctx.emit`` streams every expansion
as its own transcript turn (so ``m3d debate --config t2agent`` shows each step as it is scored),
metered views of ``ctx.pool`` bill every call to ``ctx.ledger``, and ``ctx.verdict`` assembles
the verdict. Cancelling the run's task cancels the model calls in flight, because they are
awaited (``asyncio.gather``) inside it; no AutoGen runtime sits in between to wait for.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

from autogen_core.models import LLMMessage

from m3d_agents.tools.actions import ActionRunner
from debates.strategies.t2agent.config import SubtaskConfig, T2AgentConfig
from debates.strategies.t2agent.fusion import FusionDecision, chosen_answer, decide, subtask_answer
from debates.strategies.t2agent.priors import Priors, model_priors, random_priors, uniform_priors
from debates.strategies.t2agent.prompting import (
    confidence_messages,
    prior_messages,
    render_step,
    render_trajectory,
    step_messages,
    trajectory_score_messages,
)
from m3d_agents.tools.react import ActionSpec, Step, action_specs, parse_step
from debates.strategies.t2agent.report import node_report
from debates.strategies.t2agent.diagnostics import PriorReport, SearchReport, SubtaskReport, T2AgentDiagnostics, ToolReport
from debates.strategies.t2agent.scoring import read_score
from debates.strategies.t2agent.search import Iteration, Memory, SearchOutcome, run_search
from debates.strategies.t2agent.tree import Node, SearchTree
from debates.strategy import ConfiguredStrategy, RunContext, StrategyConfig, answer_taxonomy, strategy
from m3d_agents.asking import ask, ask_choices
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.grammars import likelihood_list, react_step, ten_point_verdict, with_grammar
from m3d_agents.media.images import PreparedSample
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolContext
from m3d_agents.tools.catalogue import default_registry
from m3d_agents.tools.image_in_words import enable_image_describers
from m3d_agents.verdict import Finding, TranscriptTurn, Verdict

_EVIDENCE_ID = re.compile(r"\[(ev-[0-9a-f]{6,})\]")


SCORE_PHRASES = {"trajectory_score": "The correctness score is", "confidence_score": "The reliability score is"}
"""The last line each score prompt asks for (prompts/t2agent/trajectory_score.md, confidence_score.md)."""


class ModelRollout:
    """The model side of one post's search: step calls, tool actions, S_T and S_C; every expansion streamed."""

    def __init__(
        self,
        config: T2AgentConfig,
        prepared: PreparedSample,
        backend: Backend,
        ctx: RunContext,
        runner: ActionRunner,
        memory: Memory,
        transcript: list[TranscriptTurn],
    ) -> None:
        self.config = config
        self.settings = config.search
        self.prepared = prepared
        self.backend = backend
        self.vision = backend.vision
        self.ctx = ctx
        self.runner = runner
        self.memory = memory
        self.transcript = transcript
        registry = default_registry()
        self.specs: dict[str, dict[str, ActionSpec]] = {s.name: action_specs(s.tools, registry) for s in config.subtasks}
        self.missing = {"trajectory_score": 0, "confidence_score": 0}
        self.reused_scores = 0
        self.unscored: set[int] = set()
        """Steps whose S_T was not asked (``trajectory_scores: ranked_only``)."""
        self._scores: dict[tuple[str, str], asyncio.Future[float | None]] = {}

    # --- calls ---------------------------------------------------------------------------------

    def client(self, agent: str, role: str) -> MeteredClient:
        return self.backend.view(self.ctx.ledger, agent=agent, role=role)

    def create_kwargs(self, temperature: float, seed: int) -> dict[str, Any]:
        extra: dict[str, Any] = {"temperature": temperature, "seed": seed}
        if self.config.max_tokens is not None:
            extra["max_tokens"] = self.config.max_tokens
        return {"extra_create_args": extra}

    async def emit(self, turn: TranscriptTurn) -> None:
        self.transcript.append(turn)
        await self.ctx.emit(turn)

    async def priors(self) -> Priors:
        k = len(self.config.subtasks)
        mode = self.settings.priors
        if k == 1:
            priors = Priors([1.0], "single_subtask")
        elif mode == "uniform":
            priors = Priors(uniform_priors(k), "uniform")
        elif mode == "random":
            seed = self.settings.prior_seed if self.settings.prior_seed is not None else self.ctx.seed_for("priors")
            priors = Priors(random_priors(k, seed), "random")
        else:
            priors = await model_priors(
                self.client("prior", "prior"), prior_messages(self.config, self.prepared, self.vision), k,
                retries=self.config.parse_retries, on_retry=self.ctx.ledger.count_parse_retry, create_kwargs=with_grammar(
                    self.create_kwargs(self.settings.prior_temperature, self.ctx.seed_for("priors")),
                    likelihood_list("The likelihoods are", k)),
            )
        listed = ", ".join(f"{s.name} {v:.2f}" for s, v in zip(self.config.subtasks, priors.values))
        body = f"{priors.text.strip()}\n\n" if priors.text.strip() else ""
        await self.emit(TranscriptTurn(
            speaker="prior", role="prior", round=0, text=f"{body}Priors ({priors.source}): {listed}", parse_error=priors.error,
        ))
        return priors

    async def score(self, kind: str, agent: str, messages: list[LLMMessage]) -> float | None:
        """S_T or S_C for one prompt; an identical prompt in the same post is asked once when ``reuse_scores``.

        Scores are asked with one seed per sample (not one per node), so a response cache can serve an
        identical prompt again in a later run."""
        key = (kind, repr([getattr(m, "content", "") for m in messages]))
        if self.config.reuse_scores and key in self._scores:
            self.reused_scores += 1
            return await asyncio.shield(self._scores[key])
        future: asyncio.Future[float | None] = asyncio.ensure_future(self._ask_score(kind, agent, messages))
        if self.config.reuse_scores:
            self._scores[key] = future
        return await future

    async def _ask_score(self, kind: str, agent: str, messages: list[LLMMessage]) -> float | None:
        answer = await ask(
            self.client(agent, kind), messages, lambda text: read_score(text, self.settings.score_map),
            retries=self.config.parse_retries, on_retry=self.ctx.ledger.count_parse_retry, create_kwargs=with_grammar(
                self.create_kwargs(self.settings.score_temperature, self.ctx.seed_for("score")), ten_point_verdict(SCORE_PHRASES[kind])),
        )
        if answer.value is None:
            self.missing[kind] += 1
        return answer.value

    # --- the Rollout protocol ------------------------------------------------------------------

    async def expand(self, node: Node, tree: SearchTree, iteration: int) -> None:
        """n step answers (the n choices of one request where the backend can, else n concurrent calls; choice i
        uses the node's seed plus i); then the children in that order, their tools and their S_T, all concurrent."""
        subtask = self.config.subtask(node.subtask or "")
        specs = self.specs[subtask.name]
        must_finish = self.settings.force_finish and node.depth + 1 >= self.settings.depth
        messages = step_messages(
            self.config, subtask, specs, node, self.memory.latest(subtask.name, self.settings.memory),
            self.prepared, self.vision, must_finish,
        )
        client = self.client(subtask.name, "step")

        def parse(text: str) -> Step:
            return parse_step(text, specs, subtask.answers, must_finish=must_finish)

        answers = await ask_choices(
            client, messages, parse, self.settings.children, retries=self.config.parse_retries,
            create_kwargs=with_grammar(self.create_kwargs(self.settings.step_temperature, self.ctx.seed_for("step", node.id)),
                                       react_step(len(node.steps()) + 1, list(specs), subtask.answers, must_finish)),
            on_retry=self.ctx.ledger.count_parse_retry, one_request=self.config.children_in_one_request,
        )
        children: list[Node] = []
        for answer in answers:
            step = answer.value
            if step is None:
                children.append(tree.add(node, "dead", text=answer.text, error=answer.error, value=0.0))
            elif step.finish is not None:
                verdict = "fake" if step.finish == subtask.fake_answer else "real"
                children.append(tree.add(node, "answer", text=answer.text, thought=step.thought, finish=step.finish, answer=verdict))
            else:
                children.append(tree.add(node, "step", text=answer.text, thought=step.thought, verb=step.verb,
                                         argument=step.argument))
        steps = [(child, answer.value) for child, answer in zip(children, answers) if child.kind == "step"]
        observations = await asyncio.gather(*(self.runner.run(step, specs) for _, step in steps if step is not None))
        for (child, _), observation in zip(steps, observations):
            child.observation = observation.text
        scored = [child for child in children if child.kind != "dead" and self.needs_trajectory_score(node, child)]
        self.unscored.update(child.id for child in children if child.kind != "dead" and child not in scored)
        values = await asyncio.gather(*(
            self.score("trajectory_score", subtask.name,
                       trajectory_score_messages(self.config, subtask, child, self.prepared, self.vision))
            for child in scored
        ))
        for child, value in zip(scored, values):
            child.trajectory_score = value
            child.value = value or 0.0
        for child in children:
            await self.emit(self.child_turn(subtask, child, iteration))

    def needs_trajectory_score(self, parent: Node, child: Node) -> bool:
        """Eq. 1 for every new child, unless ``ranked_only`` and the child is a step with no sibling: UCT has
        nothing to rank it against, and its visit, in this same descent, replaces its value with a reward."""
        if self.settings.trajectory_scores == "every_child" or child.kind != "step" or len(parent.children) > 1:
            return True
        return not self.settings.force_finish and child.depth >= self.settings.depth

    async def confidence(self, leaf: Node, tree: SearchTree, iteration: int) -> float | None:
        subtask = self.config.subtask(leaf.subtask or "")
        return await self.score("confidence_score", subtask.name,
                                confidence_messages(self.config, subtask, leaf, self.prepared, self.vision))

    # --- transcript ----------------------------------------------------------------------------

    def child_turn(self, subtask: SubtaskConfig, child: Node, iteration: int) -> TranscriptTurn:
        k = child.depth
        if child.kind == "dead":
            text = f"Step {k} could not be read: {child.error}\n{child.text.strip()}"
        else:
            lines = render_step(child, k)
            score = (f"{child.trajectory_score:.2f}" if child.trajectory_score is not None
                     else "not asked (no sibling to rank it against)" if child.id in self.unscored else "unreadable")
            text = f"{lines}\nTrajectory score: {score}"
        return TranscriptTurn(speaker=subtask.name, role=child.kind, round=iteration, text=text,
                              stance=child.finish, parse_error=child.error)

    async def iteration_turn(self, done: Iteration) -> None:
        subtask = self.config.subtask(done.subtask)
        leaf = done.leaf
        if leaf.kind == "answer":
            s_c = f"{leaf.confidence_score:.2f}" if leaf.confidence_score is not None else "unreadable"
            ending = f"Finish[{leaf.finish}] with confidence score {s_c} and reward {done.reward:.2f}"
            ending += " (revisited, no new call)" if done.reused else ""
        elif leaf.kind == "dead":
            ending = "an unreadable step (reward 0)"
        else:
            ending = f"the depth limit (reward {done.reward:.2f})"
        status = {"pruned": "; confirmed real, pruned", "decided_fake": "; confirmed fake, the search stops"}.get(done.status, "")
        await self.emit(TranscriptTurn(
            speaker=subtask.name, role="iteration", round=done.number, stance=leaf.finish,
            text=f"Iteration {done.number}: selected the {subtask.title} subtask; reached {ending}{status}.",
        ))


def _decision(config: T2AgentConfig, tree: SearchTree, outcome: SearchOutcome) -> tuple[FusionDecision, dict[str, Node]]:
    chosen: dict[str, Node] = {}
    for subtask in config.subtasks:
        node = chosen_answer(tree.answers(subtask.name), config.search.fusion_answer)
        if node is not None:
            chosen[subtask.name] = node
    if outcome.deciding is not None:
        deciding = outcome.deciding
        chosen[deciding.subtask or ""] = deciding
        return decide([], config.real_label, subtask_answer(deciding, config.subtask(deciding.subtask or "").label)), chosen
    answers = [subtask_answer(chosen[s.name], s.label) for s in config.subtasks if s.name in chosen]
    return decide(answers, config.real_label), chosen


def _findings(config: T2AgentConfig, tree: SearchTree, chosen: dict[str, Node], decision: FusionDecision,
              known: set[str]) -> list[Finding]:
    """One finding per check; a finding cites only ids of evidence its steps retrieved (an id written inside
    a page's text is not a citation)."""
    findings = []
    for subtask in config.subtasks:
        node = tree.subtask(subtask.name)
        answer = chosen.get(subtask.name)
        if answer is None:
            summary = f"{subtask.title}: no answer with a readable confidence score ({node.status})"
            findings.append(Finding(modality=subtask.modality, subtask=subtask.name, summary=summary))
            continue
        p_fake = decision.p_fake.get(subtask.name)
        summary = (
            f"{subtask.title}: Finish[{answer.finish}], confidence score {answer.confidence_score:.2f}"
            + (f", p_fake {p_fake:.4f}" if p_fake is not None else "") + f" ({node.status}). {answer.thought}"
        )
        cited = sorted({m for step in answer.steps() for m in _EVIDENCE_ID.findall(step.observation or "") if m in known})
        findings.append(Finding(modality=subtask.modality, subtask=subtask.name, label=answer.finish,
                                distortion=answer.answer == "fake", summary=summary.strip(), evidence_ids=cited))
    return findings


def _report(
    config: T2AgentConfig, tree: SearchTree, priors: Priors, outcome: SearchOutcome, decision: FusionDecision,
    chosen: dict[str, Node], rollout: ModelRollout, runner: ActionRunner,
) -> SearchReport:
    subtasks = []
    for subtask in config.subtasks:
        node = tree.subtask(subtask.name)
        answer = chosen.get(subtask.name)
        subtasks.append(SubtaskReport(
            name=subtask.name, title=subtask.title, status=node.status, prior=node.prior, visits=node.visits,
            value=round(node.value, 6), answers=len(tree.answers(subtask.name)),
            chosen_answer=answer.finish if answer else None, confidence_score=answer.confidence_score if answer else None,
            reward=None if answer is None or answer.reward is None else round(answer.reward, 6),
            p_fake=decision.p_fake.get(subtask.name),
        ))
    return SearchReport(
        uct=config.search.uct,
        settings=config.search.model_dump(),
        k=config.k,
        priors=PriorReport(source=priors.source, values={s.name: v for s, v in zip(config.subtasks, priors.values)},
                           error=priors.error),
        iterations=tree.iterations,
        revisited=[s.name for s in subtasks if s.visits > 1],
        stop_reason=outcome.stop_reason,
        pruned=[n.subtask or "" for n in tree.subtasks if n.status == "pruned"],
        early_stop=outcome.deciding.subtask if outcome.deciding is not None else None,
        decided_by=decision.decided_by,
        p_real=decision.p_real,
        p_fake=decision.p_fake,
        tree_size=tree.size(),
        dead_steps=sum(1 for n in tree.root.walk() if n.kind == "dead"),
        missing_scores=dict(rollout.missing),
        reused_scores=rollout.reused_scores,
        unscored_steps=len(rollout.unscored),
        tools=ToolReport(runs=dict(runner.runs), cache_hits=dict(runner.cache_hits), refused=dict(runner.refused),
                         errors=list(runner.errors)),
        subtasks=subtasks,
        path_per_iteration=[i.path for i in outcome.iterations],
        tree=node_report(tree.root),
    )


def _rationale(decision: FusionDecision, chosen: dict[str, Node], config: T2AgentConfig) -> str:
    parts = [decision.reason]
    for subtask in config.subtasks:
        answer = chosen.get(subtask.name)
        if answer is not None:
            parts.append(f"{subtask.title}:\n{render_trajectory(answer.steps())}")
    return "\n\n".join(parts)


@strategy("t2agent", diagnostics=T2AgentDiagnostics)
class T2Agent(ConfiguredStrategy[T2AgentConfig]):
    """Tree search over forgery-source subtasks with tool actions, a dual reward, pruning, early stop and fusion."""

    config_model: ClassVar[type[StrategyConfig]] = T2AgentConfig

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        """Everything per post (tree, memory, tool cache, score cache) is built here, so posts share nothing."""
        config = self.config
        prepared = ctx.prepare(sample)
        answer_taxonomy(config, config.taxonomy, sample)
        backend_name, backend = ctx.backend_for(config)
        if config.describe_images:
            enable_image_describers()
        registry = default_registry()
        evidence = await ctx.gather_evidence(sample, from_source=self._needs_gathered_evidence())
        tools = ToolContext(prepared, ledger=ctx.ledger, backend=backend, agent="tools", evidence=evidence,
                            searchers=dict(ctx.searchers), setup=ctx.tool_setup(config))
        runner = ActionRunner(registry, tools, cache_results=config.cache_tools)
        memory = Memory()
        transcript: list[TranscriptTurn] = []
        rollout = ModelRollout(config, prepared, backend, ctx, runner, memory, transcript)

        priors = await rollout.priors()
        tree = SearchTree.build([s.name for s in config.subtasks], priors.values)
        outcome = await run_search(tree, rollout, config.search, memory, on_iteration=rollout.iteration_turn)
        decision, chosen = _decision(config, tree, outcome)
        report = _report(config, tree, priors, outcome, decision, chosen, rollout, runner)
        diagnostics = T2AgentDiagnostics(
            stop_reason=outcome.stop_reason, iterations=tree.iterations, revisited=bool(report.revisited),
            decided_by=decision.decided_by, search=report,
        )
        common: dict[str, Any] = {
            "transcript": transcript,
            "findings": _findings(config, tree, chosen, decision, {e.id for e in [*tools.retrieved, *tools.evidence]}),
            "evidence_ids": list(dict.fromkeys(e.id for e in tools.retrieved)),
            "diagnostics": diagnostics,
        }
        if decision.label is None:
            return ctx.verdict(sample, config, backend=backend_name, label=None, abstain_reason=decision.reason, **common)
        return ctx.verdict(
            sample, config, backend=backend_name, label=decision.label, label_taxonomy=config.taxonomy,
            confidence=round(min(1.0, max(0.0, decision.confidence or 0.0)), 6), rationale=_rationale(decision, chosen, config),
            **common,
        )

    def _needs_gathered_evidence(self) -> bool:
        """Time detection dates the image from reverse-image-search matches, which must be gathered first."""
        registry = default_registry()
        return any(registry.card(tool).category == "time" for s in self.config.subtasks for tool in s.tools.values())
