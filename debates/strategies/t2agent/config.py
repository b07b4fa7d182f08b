"""The configuration of the ``t2agent`` strategy: the subtasks (forgery sources) and the search settings.

Every number the paper gives is a default here (n = 2, C = 2, α = 0.5); every choice it leaves
open is a setting with the value the implementation spec argues for (K, d, τ and what it is
applied to, the UCT form, the score map, the failure memory, temperatures, the forced finish),
so an ablation is a YAML file, not a code change. The T2Agent page of the documentation (docs/systems/t2agent.md) lists them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

import prompts
from debates.strategy import CallBudget, StrategyConfig, configuration, strategy_field
from m3d_agents.config_types import MaxTokens, Seed, Settings, Temperature
from m3d_agents.labels import get_taxonomy
from m3d_agents.tools.catalogue import default_registry
from m3d_agents.verdict import Modality

from m3d_agents.tools.react import FINISH, MenuDetail, canonical_answer


class SubtaskConfig(Settings):
    """One forgery source: what it checks, its two Finish answers, the label it proves, its actions."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="the subtask's id (lower case), in diagnostics and findings")
    title: str = Field(description="what the check decides, for prompts and transcripts (\"text veracity\")")
    label: str = Field(description="the label of the configuration's taxonomy that a confident fake answer proves")
    fake_answer: str = Field(description="the Finish answer that says the post is forged through this source")
    real_answer: str = Field(description="the Finish answer that says it is not")
    tools: dict[str, str] = Field(
        default_factory=dict, description="action verb -> registered tool; only these run in this subtask"
    )
    prompt: str = Field(description="the task template under prompts/ (t2agent/task_text ...)")
    modality: Modality = Field("overall", description="the verdict finding's modality")
    sees_image: bool = Field(
        True, description="show the image in this subtask's step calls; a check of the text alone works from the text and its searches"
    )

    @property
    def answers(self) -> tuple[str, str]:
        return (self.fake_answer, self.real_answer)


class SearchSettings(Settings):
    """Alg. 1's knobs; see the module docstring and docs/systems/t2agent.md for which the paper fixes."""

    iterations: int | None = Field(
        None, ge=1, le=50, description="K, the most iterations per post; None: one more than the number of subtasks."
        " The paper does not report K. Under eq. 3 with C = 2 a visited subtask outscores an unvisited one only when the"
        " unvisited one's prior is about 0, so the search revisits a subtask (as the paper's cases do, paper lines 127,"
        " 287) only once every open subtask has had its first visit: K must exceed the number of subtasks. One more is"
        " the smallest K that allows a revisit, and keeps the search as short as the paper's (Table 7: 2.28 iterations"
        " a post; its cases end after 3)",
    )
    children: int = Field(2, ge=1, le=8, description="n, children per expansion (paper: 2)")
    depth: int = Field(4, ge=1, le=12, description="d, the most steps in a trajectory (paper: not reported)")
    exploration: float = Field(2.0, ge=0.0, description="C, the exploration weight of UCT (paper: 2)")
    alpha: float = Field(0.5, ge=0.0, le=1.0, description="α in V = α·S_T + (1 − α)·S_C (paper: 0.5)")
    threshold: float = Field(0.8, ge=0.0, le=1.0, description="τ, 'high confidence' for pruning and early stop (>=)")
    threshold_on: Literal["confidence", "reward"] = Field("confidence", description="what τ is compared with: S_C or the reward")
    uct: Literal["eq3", "alg1"] = Field("eq3", description="eq3: V/(N+1) + exploration; alg1: V + exploration")
    priors: Literal["lvlm", "uniform", "random"] = Field("lvlm", description="lvlm: one model call; random: Table 7's ablation")
    prior_seed: Seed | None = Field(None, description="random priors: the seed (None: one derived from the sample's seed)")
    memory: int = Field(2, ge=0, le=10, description="M, earlier failed trajectories of the subtask shown in its step prompts")
    force_finish: bool = Field(True, description="at depth d the step must be a Finish, so every rollout ends in an answer")
    prune: bool = Field(True, description="stop exploring a subtask confirmed real")
    early_stop: bool = Field(True, description="end the search on a subtask confirmed fake")
    score_map: Literal["tenth", "ninth"] = Field("tenth", description="1..10 scores to [0, 1]: s/10 (tenth) or (s−1)/9 (ninth)")
    fusion_answer: Literal["best_reward", "latest"] = Field(
        "best_reward", description="which answer of a subtask enters the fusion: the highest reward (ties: latest), or the latest"
    )
    trajectory_scores: Literal["every_child", "ranked_only"] = Field(
        "every_child", description="every_child: S_T of every new child (eq. 1); ranked_only: a step that is its parent's"
        " only child is not scored, since its first visit, at once, replaces its value before anything reads it",
    )
    step_temperature: Temperature = Field(0.7, description="temperature of the step calls that expand the tree (ours)")
    score_temperature: Temperature = Field(
        0.0, description="temperature of the S_T and S_C score calls; 0 makes a score a function of its prompt (ours)"
    )
    prior_temperature: Temperature = Field(0.0, description="temperature of the one call that gives the subtask priors (ours)")

    def k(self, subtasks: int) -> int:
        """K for a search over ``subtasks`` subtasks: ``iterations``, or one more than the number of subtasks when it is None."""
        return self.iterations if self.iterations is not None else subtasks + 1

    def bound(self, subtasks: int) -> int:
        """The most model calls of one post without retries or model-backed tools: 1 + K(2nd + 1)."""
        return 1 + self.k(subtasks) * (2 * self.children * self.depth + 1)


@configuration("t2agent")
class T2AgentConfig(StrategyConfig):
    """Tree search over forgery-source subtasks (T2Agent): ``strategy: t2agent``."""

    strategy: Literal["t2agent"] = strategy_field("t2agent")
    taxonomy: str = Field("m3d", description="the label set of the subtasks' labels; the verdict is carried over to the sample's")
    real_label: str = Field("original", description="the label when no subtask proves a forgery")
    max_tokens: MaxTokens | None = Field(None, description="caps every call's answer (None: the backend's)")
    prior_prompt: str = Field("t2agent/priors", description="the prior template under prompts/")
    describe_images: bool = Field(True, description="text-only backends see forensic and OCR findings in place of the image")
    scores_see_image: bool = Field(
        True, description="show the image to S_T and S_C calls, as the paper's scores read the news c, image included"
        " (paper lines 54, 68); False (t2agent-lean) judges the post's text and the trajectory's observations only"
    )
    trajectory_analysis: Literal["detailed", "brief"] = Field(
        "detailed", description="what S_T asks for before its score: a detailed analysis, as the paper's prompt does"
        " (paper line 304), or a brief one of at most four sentences (t2agent-lean)",
    )
    menu: MenuDetail = Field(
        "brief", description="the action menu of step prompts: brief (each action's syntax and what it does) or full"
        " (also when to use it and what it returns)",
    )
    score_task: Literal["brief", "full"] = Field(
        "brief", description="what S_T and S_C prompts say about the check: brief (its title and its two answers) or full"
        " (the whole task the step prompts give)",
    )
    children_in_one_request: bool = Field(
        True, description="the n children of an expansion are the n choices of one request when the backend can answer several"
        " (OpenAI, vLLM), so their shared prompt is sent and billed once; otherwise n concurrent calls",
    )
    cache_tools: bool = Field(True, description="run each (tool, argument) once per post; repeats are served from the first")
    reuse_scores: bool = Field(
        True, description="score an identical prompt once per post (scores are asked at temperature 0)"
    )
    search: SearchSettings = Field(default_factory=SearchSettings, description="the tree search's settings (Alg. 1)")
    subtasks: list[SubtaskConfig] = Field(
        min_length=1, description="the forgery sources searched, one subtree each; the verdict fuses their answers"
    )
    base_tools: list[str] = Field(
        default_factory=list, description="D_base of greedy tool selection (Alg. 2): the action verbs it starts from"
        " (m3d select-tools without --base); empty: every verb is a candidate but the first"
    )

    @model_validator(mode="after")
    def _check(self) -> "T2AgentConfig":
        taxonomy = get_taxonomy(self.taxonomy)
        if self.real_label not in taxonomy.labels or taxonomy.misinformation[self.real_label]:
            raise ValueError(f"real_label {self.real_label!r} must be a label of {taxonomy.name} that is not misinformation")
        names = [s.name for s in self.subtasks]
        if len(set(names)) != len(names):
            raise ValueError(f"subtask names must be unique, got {names}")
        seen_answers: dict[str, str] = {}
        registry = default_registry()
        for subtask in self.subtasks:
            if subtask.label not in taxonomy.labels or not taxonomy.misinformation[subtask.label]:
                raise ValueError(
                    f"subtask {subtask.name}: label {subtask.label!r} is not a forgery label of {taxonomy.name}"
                    f" ({', '.join(label for label, fake in taxonomy.misinformation.items() if fake)})"
                )
            for answer in subtask.answers:
                key = canonical_answer(answer)
                if not key:
                    raise ValueError(f"subtask {subtask.name}: an empty Finish answer")
                if key in seen_answers:
                    raise ValueError(f"subtask {subtask.name}: Finish[{answer}] is also an answer of {seen_answers[key]}")
                seen_answers[key] = subtask.name
            for verb, tool in subtask.tools.items():
                if verb.lower() == FINISH.lower() or not verb.isidentifier():
                    raise ValueError(f"subtask {subtask.name}: {verb!r} cannot be an action verb")
                if tool not in registry.names():
                    raise ValueError(f"subtask {subtask.name}: unknown tool {tool!r} for {verb}; known: {', '.join(registry.names())}")
            _require_prompt(subtask.prompt, f"subtask {subtask.name}")
        _require_prompt(self.prior_prompt, "prior_prompt")
        strange = [v for v in self.base_tools if v not in self.tool_verbs()]
        if strange:
            raise ValueError(f"base_tools: {', '.join(strange)} not among the action verbs {', '.join(self.tool_verbs())}")
        return self

    def subtask(self, name: str) -> SubtaskConfig:
        return next(s for s in self.subtasks if s.name == name)

    @property
    def k(self) -> int:
        """K, the most iterations per post, for this configuration's subtasks."""
        return self.search.k(len(self.subtasks))

    def bound(self) -> int:
        """The most model calls of one post without retries or model-backed tools (:meth:`SearchSettings.bound`)."""
        return self.search.bound(len(self.subtasks))

    def tools_used(self) -> list[str]:
        return list(dict.fromkeys([*(t for s in self.subtasks for t in s.tools.values()), *self.tools]))

    def call_budget(self) -> CallBudget:
        """Alg. 1's bound (:meth:`SearchSettings.bound`), with the prior call only for model priors, plus one
        call per step for steps whose tool asks a model."""
        registry = default_registry()
        search = self.search
        calls = self.bound() - (0 if search.priors == "lvlm" else 1)
        model_tools = any(registry.card(t).calls_model for s in self.subtasks for t in s.tools.values())
        if model_tools:
            calls += self.k * search.children * search.depth
        return CallBudget(calls=calls, answer_tokens=self.max_tokens,
                          counts="priors, steps, S_T and S_C of K iterations" + (", a model tool per step" if model_tools else ""))

    def tool_verbs(self) -> list[str]:
        """Every action verb of the configuration, in first-use order (the toolbox that tool selection trims)."""
        verbs: list[str] = []
        for subtask in self.subtasks:
            verbs.extend(v for v in subtask.tools if v not in verbs)
        return verbs

    def selection_base(self) -> list[str]:
        """Where greedy tool selection starts: ``base_tools``, else the first verb of the toolbox."""
        return list(self.base_tools) or self.tool_verbs()[:1]

    def with_tools(self, verbs: list[str] | tuple[str, ...]) -> "T2AgentConfig":
        """A copy where each subtask keeps only the verbs in ``verbs`` (Alg. 2 adds a tool to every subtask that has it)."""
        unknown = [v for v in verbs if v not in self.tool_verbs()]
        if unknown:
            raise ValueError(f"{', '.join(unknown)} not among the actions of {self.name}: {', '.join(self.tool_verbs())}")
        copy = self.model_copy(deep=True)
        for subtask in copy.subtasks:
            subtask.tools = {v: t for v, t in subtask.tools.items() if v in verbs}
        return copy


def _require_prompt(name: str, where: str) -> None:
    try:
        prompts.load(name)
    except FileNotFoundError:
        raise ValueError(f"{where}: no prompt template {name!r} under prompts/") from None
