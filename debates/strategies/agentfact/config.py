"""The settings of an AgentFact configuration: which agents take part, in which setting, under which limits.

Every threshold and rule of the control loop is a setting, because the paper states them loosely
and its public code uses others (see docs/systems/agentfact.md for each choice): the
screener's trigger, its batch size, the confidence that stops the loop and whether it must be
exceeded, whether the screener may stop the loop, when the reasoner follows a screening, which
turns count as steps, the step and plan limits, the number of items kept per query and of
reverse-image pages, and the cap on the useful pool. The defaults are the paper's; the
``agentfact-code`` configuration sets the public code's.
"""

from __future__ import annotations

import warnings
from typing import Literal, get_args

from pydantic import Field, model_validator

from debates.strategy import CallBudget, StrategyConfig, configuration, strategy_field
from m3d_agents.config_types import MaxTokens, Settings, Temperature

Role = Literal["strategist", "retriever", "visual_analyst", "screener", "reasoner", "explainer"]
ROLES: tuple[Role, ...] = get_args(Role)
Setting = Literal["closed_book", "evidence_bounded", "open_web"]
StopWhen = Literal["above", "at_least"]
ReasonAfter = Literal["every_growth", "grown_pool"]
StepTurns = Literal["reasoning", "all"]


class AgentFactSeat(Settings):
    """One agent of the workflow; its name is its role."""

    role: Role = Field(description="strategist, retriever, visual_analyst, screener, reasoner or explainer")
    backend: str | None = Field(None, description="None: the configuration's backend")
    model: str | None = Field(None, description="a model name the backend serves, in place of its own; None: the backend's model")


@configuration("agentfact")
class AgentFactConfig(StrategyConfig):
    strategy: Literal["agentfact"] = strategy_field("agentfact")
    setting: Setting = Field(
        "open_web",
        description="closed_book: no evidence; evidence_bounded: the data set's gold evidence only; open_web: the full "
        "search loop (the paper's main results)",
    )
    seats: list[AgentFactSeat] = Field(description="the agents of the workflow, one per role; an explainer and a screener or reasoner are required")
    screen_threshold: int = Field(3, ge=1, description="unscreened items that call the screener (the paper's R-T trigger)")
    screen_batch: int = Field(10, ge=1, description="items the screener reads at once; the rest wait for the next turn")
    stop_confidence: int = Field(
        4, ge=1, le=5, description="the confidence threshold: a judgement other than unproven whose sufficiency exceeds it "
        "ends the loop (the paper's 'exceeds 4'; see stop_when)",
    )
    stop_when: StopWhen = Field(
        "above", description="above: sufficiency must exceed stop_confidence (the paper); at_least: reaching it is "
        "enough (the public code, agentfact-code)",
    )
    screener_stops: bool = Field(
        False, description="whether the screener's own judgement can end the loop; the paper's R-T only selects "
        "evidence (paper line 268), the public code lets it stop (agentfact-code). Without a reasoner seat the screener "
        "is the only judge and always can",
    )
    reason_after: ReasonAfter = Field(
        "every_growth", description="when the reasoner follows a screening: every_growth, whenever the useful pool "
        "grew (the paper); grown_pool, only when it grew and was not empty before (the public code)",
    )
    step_turns: StepTurns = Field(
        "reasoning", description="which turns count towards max_steps: reasoning, the screener's and the reasoner's "
        "(the paper's 'reasoning steps'); all, the retriever's too (the public code)",
    )
    max_steps: int = Field(12, ge=1, description="the step limit; which turns count is step_turns")
    max_plans: int = Field(
        3, ge=1, description="plans, replans included; without a strategist, the rounds of queries written for the claim",
    )
    per_query_items: int = Field(3, ge=1, description="evidence items kept per search query")
    max_useful: int | None = Field(None, ge=1, description="stop once the useful pool exceeds this after a reasoner turn")
    reverse_pages: int = Field(5, ge=0, description="reverse-image pages the visual analyst reads")
    search_post_if_plan_empty: bool = Field(
        True, description="a plan with nothing to check or search, before anything was searched, searches the post as written",
    )
    plan_items: int = Field(3, ge=0, le=3, description="sentences to check, and background needs, per plan")
    plan_steps: int = Field(4, ge=1, le=8, description="reasoning steps per plan")
    key_points: int = Field(3, ge=1, le=5, description="key points per explanation")
    evidence_chars: int = Field(800, ge=100, description="characters of each evidence item shown in a prompt")
    post_image: list[Role] = Field(
        default_factory=lambda: list(ROLES), description="the agents shown the post's image with the post, when their "
        "backend can see: the paper's post context is text and image (paper line 166) for every agent it gives the post",
    )
    image_matching: bool = Field(
        True, description="Agent-IR on a vision backend: download the matched images through the fetch guards, have the "
        "model sort them into the paper's three groups (dropping those with no close relationship) and score tampering "
        "against the closest match (paper lines 229, 233); a text-only backend reports both unavailable",
    )
    miscaption: bool = Field(True, description="ask whether each matched page captions the image differently")
    miscaption_chars: int = Field(2000, ge=100, description="characters of a matched page's own text the miscaption judge reads")
    deepfake: bool = Field(
        True, description="score the post image with the learned-detector slot (a DIRE-style checkpoint, paper line "
        "241; tools: {learned_detector: {model: PATH}}); without a checkpoint the score is reported unavailable",
    )
    forensics: bool = Field(
        False, description="add the fused score of the pixel and metadata forensic tools as a finding (ours, not the "
        "paper's)",
    )
    explain_judgements: int | None = Field(
        None, ge=1, description="the reasoning outputs the explainer reads, the latest ones; None: all of them (the "
        "paper), 2 in the public code",
    )
    temperature: Temperature | None = Field(None, description="every agent's sampling temperature; None: the backend's own")
    max_tokens: MaxTokens | None = Field(None, description="a cap on each answer's length; None: the backend's own")
    text_chars: int | None = Field(
        None, ge=20, description="a cap on every free-text field of an answer (reasons, analyses, key points); None: "
        "the schemas' own bounds (160 to 800 characters)",
    )

    @model_validator(mode="after")
    def _seats_make_a_workflow(self) -> "AgentFactConfig":
        roles = [seat.role for seat in self.seats]
        for role in ROLES:
            if roles.count(role) > 1:
                raise ValueError(f"seats: the role {role!r} appears {roles.count(role)} times; each role has one seat at most")
        if "explainer" not in roles:
            raise ValueError("seats: an explainer is required; it writes the verdict")
        if "screener" not in roles and "reasoner" not in roles:
            raise ValueError("seats: a screener or a reasoner is required; someone must judge the evidence")
        if self.setting != "open_web":
            searching = [role for role in ("retriever", "visual_analyst") if role in roles]
            if searching:
                warnings.warn(
                    f"{self.name}: the {self.setting} setting never searches, so the {' and '.join(searching)} seat(s) stay idle",
                    UserWarning, stacklevel=2,
                )
        return self

    def has(self, role: Role) -> bool:
        return any(seat.role == role for seat in self.seats)

    def call_budget(self) -> CallBudget:
        """Plans, the query writer (one call per plan or per round of queries for the claim), the reasoning
        steps, Agent-IR's calls (image matching, tampering, one miscaption judgement per page) and the
        explanation; retrieval's own calls (page summaries, domain ratings) are not bounded here."""
        searching = self.setting == "open_web"
        plans = self.max_plans if self.has("strategist") else 0
        writer = self.max_plans if searching and self.has("retriever") else 0
        steps = self.max_steps if searching or self.has("reasoner") or self.has("screener") else 0
        analyst = 0
        if searching and self.has("visual_analyst"):
            analyst = (2 if self.image_matching else 0) + (self.reverse_pages if self.miscaption else 0)
        return CallBudget(calls=plans + writer + steps + analyst + 1, answer_tokens=self.max_tokens,
                          counts="plans, query writing, reasoning steps, image matching, tampering, miscaption checks, the "
                          "explanation; not page summaries")

    def tools_used(self) -> list[str]:
        """The registered tools Agent-IR runs: the learned detector (the paper's DIRE slot) and, when asked, the fused score."""
        used = list(self.tools)
        if self.setting == "open_web" and self.has("visual_analyst"):
            used += ["learned_detector"] if self.deepfake else []
            used += ["forensic_fusion"] if self.forensics else []
        return list(dict.fromkeys(used))

    def image_seats(self) -> list[str | None]:
        """Agent-IR's seat: image matching, tampering and the miscaption judge look at images there, whatever the others'
        backends are."""
        return [self.seat("visual_analyst").backend] if self.has("visual_analyst") else []

    def seat(self, role: Role) -> AgentFactSeat:
        for seat in self.seats:
            if seat.role == role:
                return seat
        raise KeyError(role)

    def judge(self) -> Role:
        """The seat that reasons where the workflow needs one judgement: the reasoner, else the screener."""
        return "reasoner" if self.has("reasoner") else "screener"

    def step_roles(self) -> tuple[Role, ...]:
        """The turns that count towards ``max_steps``."""
        return ("screener", "reasoner") if self.step_turns == "reasoning" else ("retriever", "screener", "reasoner")

    def confident(self, sufficiency: int) -> bool:
        """Whether a judgement's sufficiency is enough to stop (with a label other than unproven)."""
        return sufficiency > self.stop_confidence if self.stop_when == "above" else sufficiency >= self.stop_confidence

    def can_stop(self, role: Role) -> bool:
        """Whether a judgement by ``role`` may end the loop: the reasoner's always, the screener's only when it is
        the sole judge or ``screener_stops``."""
        return role == "reasoner" or self.screener_stops or not self.has("reasoner")

    def sifter(self) -> Role:
        """The seat that reads new evidence: the screener, else the reasoner (the ablation without R-T)."""
        return "screener" if self.has("screener") else "reasoner"
