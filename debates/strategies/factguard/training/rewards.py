"""FactGuard's trajectory reward, one pure function per term (arXiv 2602.22963, Eq. 8-10).

``R(τ) = R_acc + R_format + λ·R_risk + R_tool``, with fake as the positive class:

* ``R_acc``: 1 when the final label is the gold one, else 0;
* ``R_format``: 1 when every turn was well-formed (strictly) and the last one answered, else 0;
* ``R_risk = −α·1[false positive] − γ·1[false negative]`` (the paper's cost-sensitive term);
* ``R_tool``: ``+r⁺`` when a tool was used and the answer is right, ``−r⁻`` when a tool was used and
  it is not, 0 without tools (the paper's gate of the tool reward on accuracy). Which calls count as
  use is :attr:`RewardConfig.tool_use`: every call the policy made (``called``, the paper's, which
  penalises "unnecessary or ineffective tool use", line 143), or only calls that ran and answered
  (``answered``, ours: a call refused, failed or answered "unavailable" then earns neither r⁺ nor r⁻).

No readable answer scores ``R_acc = R_format = 0`` and ``R_risk = −max(α, γ)`` (ours), which keeps
the order malformed < wrong < right for any positive costs. The values of the terms, λ, α, γ, r⁺ and
r⁻ are not in the paper; the defaults are ours (α:γ = 1:1 is the paper's). ``format_gate`` is an
ablation that multiplies the whole reward by ``R_format``; in the TRL path each term is multiplied
by ``R_format``, so the weighted sum TRL normalises is the gated total. λ = 0 is the paper's
"w/o R_risk" and r⁺ = r⁻ = 0 its "w/o R_tool" (Table 3).

The functions have TRL's reward signature, ``(completions, **kwargs) -> list[float]``, and no torch
dependency, so they are tested and used for recorded runs without the training extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.errors import ParseError
from debates.strategies.factguard.turn_format import ANSWER_STYLES, parse_agent_turn
from m3d_agents.tools.catalogue import ARGUMENTS


ToolUse = Literal["called", "answered"]


class RewardConfig(BaseModel):
    """The reward's settings; each is an ablation of the paper's (Tables 2 and 3) or a value it leaves open."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(1.0, gt=0, description="α, the cost of a false positive (real called fake); Table 2 varies α:γ")
    gamma: float = Field(1.0, gt=0, description="γ, the cost of a false negative (fake called real); the paper's default is α:γ = 1:1")
    lam: float = Field(1.0, ge=0, description="λ, the weight of the risk term; 0 is the paper's 'w/o R_risk' (value unstated; ours 1)")
    r_tool_pos: float = Field(0.2, ge=0, lt=1, description="r⁺, paid when a tool was used and the answer is right (unstated; ours 0.2)")
    r_tool_neg: float = Field(0.2, ge=0, lt=1, description="r⁻, charged when a tool was used and the answer is wrong; r⁺ = r⁻ = 0 is 'w/o R_tool'")
    format_gate: bool = Field(False, description="multiply the whole reward by R_format (an ablation of ours, off in the paper)")
    tool_use: ToolUse = Field(
        "called", description="which tool calls R_tool counts: 'called', every call the policy made, refused, failed or "
        "'unavailable' ones too (the paper's, which penalises ineffective tool use); 'answered', only calls that ran and "
        "answered (ours: an ineffective call then costs nothing)")


@dataclass(frozen=True)
class Outcome:
    """What the reward needs of one trajectory."""

    predicted: str | None
    """``fake``, ``real``, or None when no answer could be read."""
    gold: str
    well_formed: bool
    used_tool: bool
    """The policy made at least one tool call."""
    tool_answered: bool = False
    """At least one of its calls ran and answered (not refused, failed or "unavailable")."""


class RewardBreakdown(BaseModel):
    accuracy: float
    format: float
    risk: float
    tool: float
    total: float


def accuracy_term(outcome: Outcome) -> float:
    return 1.0 if outcome.predicted is not None and outcome.predicted == outcome.gold else 0.0


def format_term(outcome: Outcome) -> float:
    return 1.0 if outcome.well_formed and outcome.predicted is not None else 0.0


def risk_term(outcome: Outcome, config: RewardConfig) -> float:
    if outcome.predicted is None:
        return -max(config.alpha, config.gamma)
    if outcome.predicted == "fake" and outcome.gold == "real":
        return -config.alpha
    if outcome.predicted == "real" and outcome.gold == "fake":
        return -config.gamma
    return 0.0


def tool_term(outcome: Outcome, config: RewardConfig) -> float:
    if not (outcome.tool_answered if config.tool_use == "answered" else outcome.used_tool):
        return 0.0
    return config.r_tool_pos if accuracy_term(outcome) > 0 else -config.r_tool_neg


def trajectory_reward(outcome: Outcome, config: RewardConfig | None = None) -> RewardBreakdown:
    config = config or RewardConfig()
    acc, fmt = accuracy_term(outcome), format_term(outcome)
    risk, tool = risk_term(outcome, config), tool_term(outcome, config)
    total = acc + fmt + config.lam * risk + tool
    if config.format_gate:
        total *= fmt
    return RewardBreakdown(accuracy=acc, format=fmt, risk=risk, tool=tool, total=total)


# --- TRL reward functions -------------------------------------------------------------------------


def completion_text(completion: Any) -> str:
    """A TRL completion: plain text, or a list of chat messages whose assistant contents are joined."""
    if isinstance(completion, str):
        return completion
    return "\n".join(str(m.get("content") or "") for m in completion if m.get("role") == "assistant")


def outcome_of_text(text: str, gold: str, answer_style: str = "label") -> Outcome:
    """The outcome of a single-turn completion, read strictly (the format reward is strict)."""
    try:
        turn = parse_agent_turn(text, dict(ARGUMENTS), tools_open=False, answer_style=answer_style, strict=True)
        return Outcome(predicted=turn.answer, gold=gold, well_formed=True, used_tool=False)
    except ParseError:
        pass
    try:
        turn = parse_agent_turn(text, dict(ARGUMENTS), tools_open=False, answer_style=answer_style)
        return Outcome(predicted=turn.answer, gold=gold, well_formed=False, used_tool=False)
    except ParseError:
        return Outcome(predicted=None, gold=gold, well_formed=False, used_tool=False)


def outcomes(completions: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Outcome]:
    """Outcomes from the rollout's ``outcome`` field when it gave one (multi-turn), else from the text."""
    given = kwargs.get("outcome")
    if given is not None:
        return [o if isinstance(o, Outcome) else Outcome(**o) for o in given]
    golds = kwargs.get("gold") or kwargs.get("label")
    if golds is None:
        raise ValueError("the reward needs the gold label of each prompt (a 'gold' column)")
    style = (kwargs.get("answer_style") or ["label"])[0]
    if style not in ANSWER_STYLES:
        style = "label"
    return [outcome_of_text(completion_text(c), g, style) for c, g in zip(completions, golds)]


RewardFunction = Callable[..., list[float]]


def reward_functions(config: RewardConfig | None = None) -> list[RewardFunction]:
    """The four terms as TRL reward functions, in the order [accuracy, format, risk, tool].

    λ is applied through TRL's ``reward_weights`` ([1, 1, λ, 1]) so each term is logged unweighted.
    With ``format_gate`` every term is multiplied by ``R_format``: TRL's weighted sum is then
    ``R_format · (R_acc + R_format + λ·R_risk + R_tool)``, the gated total of :func:`trajectory_reward`.
    """
    config = config or RewardConfig()

    def gated(term: Callable[[Outcome], float]) -> RewardFunction:
        def score(completions: Sequence[Any], **kwargs: Any) -> list[float]:
            found = outcomes(completions, kwargs)
            return [term(o) * format_term(o) if config.format_gate else term(o) for o in found]

        return score

    def accuracy(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        return gated(accuracy_term)(completions, **kwargs)

    def format(completions: Sequence[Any], **kwargs: Any) -> list[float]:  # noqa: A001 - the term's name in the logs
        return gated(format_term)(completions, **kwargs)

    def risk(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        return gated(lambda o: risk_term(o, config))(completions, **kwargs)

    def tool(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        return gated(lambda o: tool_term(o, config))(completions, **kwargs)

    return [accuracy, format, risk, tool]


def reward_weights(config: RewardConfig | None = None) -> list[float]:
    config = config or RewardConfig()
    return [1.0, 1.0, config.lam, 1.0]
