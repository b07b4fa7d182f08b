"""The settings of an AgentFact configuration: which agents take part, in which setting, under which limits.

Every threshold of the control loop is a setting, because the paper states them loosely and its
public code uses others (see the README's AgentFact section for each choice): the screener's
trigger, its batch size, the confidence that stops the loop, the step and plan limits, the
number of items kept per query and of reverse-image pages, and the cap on the useful pool.
"""

from __future__ import annotations

import warnings
from typing import Literal, get_args

from pydantic import Field, model_validator

from debates.strategy import CallBudget, StrategyConfig, strategy_field
from m3d_agents.config_types import MaxTokens, Settings, Temperature

Role = Literal["strategist", "retriever", "visual_analyst", "screener", "reasoner", "explainer"]
ROLES: tuple[Role, ...] = get_args(Role)
Setting = Literal["closed_book", "evidence_bounded", "open_web"]


class AgentFactSeat(Settings):
    """One agent of the workflow; its name is its role."""

    role: Role = Field(description="strategist, retriever, visual_analyst, screener, reasoner or explainer")
    backend: str | None = Field(None, description="None: the configuration's backend")
    model: str | None = Field(None, description="a model name the backend serves, in place of its own; None: the backend's model")


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
    stop_confidence: int = Field(4, ge=1, le=5, description="sufficiency at which a label other than unproven ends the loop")
    max_steps: int = Field(12, ge=1, description="retriever, screener and reasoner turns, in all")
    max_plans: int = Field(3, ge=1, description="plans, replans included")
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
    miscaption: bool = Field(True, description="ask whether each matched page captions the image differently")
    forensics: bool = Field(True, description="add the fused forensic score of the post image as a finding")
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
        """Plans, the step limit (a retriever turn writes its queries in one call), the visual analyst's
        miscaption judgements and the explanation; retrieval's own calls (page summaries, domain ratings) are not bounded here."""
        searching = self.setting == "open_web"
        plans = self.max_plans if self.has("strategist") else 0
        steps = self.max_steps if searching or self.has("reasoner") or self.has("screener") else 0
        analyst = self.reverse_pages if searching and self.has("visual_analyst") and self.miscaption else 0
        return CallBudget(calls=plans + steps + analyst + 1, answer_tokens=self.max_tokens,
                          counts="plans, steps, miscaption checks, the explanation; not page summaries")

    def seat(self, role: Role) -> AgentFactSeat:
        for seat in self.seats:
            if seat.role == role:
                return seat
        raise KeyError(role)

    def judge(self) -> Role:
        """The seat that reasons where the workflow needs one judgement: the reasoner, else the screener."""
        return "reasoner" if self.has("reasoner") else "screener"

    def sifter(self) -> Role:
        """The seat that reads new evidence: the screener, else the reasoner (the ablation without R-T)."""
        return "screener" if self.has("screener") else "reasoner"
