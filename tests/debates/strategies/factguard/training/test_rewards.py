"""FactGuard's reward terms: the full truth table, group advantages, and the ordering malformed < wrong < right."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debates.strategies.factguard.training.rewards import (
    Outcome,
    RewardConfig,
    reward_functions,
    reward_weights,
    trajectory_reward,
)
from tests.support.grpo_oracle import group_advantages

CASES = {  # name: (predicted, gold)
    "right": ("fake", "fake"),
    "false_positive": ("fake", "real"),
    "false_negative": ("real", "fake"),
    "no_answer": (None, "fake"),
}


def expected(case: str, tool: bool, well_formed: bool, alpha: float, gamma: float) -> tuple[float, float, float, float]:
    acc = 1.0 if case == "right" else 0.0
    fmt = 1.0 if well_formed and case != "no_answer" else 0.0
    risk = {"right": 0.0, "false_positive": -alpha, "false_negative": -gamma, "no_answer": -max(alpha, gamma)}[case]
    tool_reward = (0.2 if acc else -0.2) if tool else 0.0
    return acc, fmt, risk, tool_reward


@pytest.mark.parametrize("ratio", [(1.0, 2.0), (1.0, 1.0), (2.0, 1.0)])
@pytest.mark.parametrize("case, tool, well_formed", list(itertools.product(CASES, [True, False], [True, False])))
def test_truth_table(case: str, tool: bool, well_formed: bool, ratio: tuple[float, float]) -> None:
    alpha, gamma = ratio
    predicted, gold = CASES[case]
    got = trajectory_reward(Outcome(predicted, gold, well_formed, tool), RewardConfig(alpha=alpha, gamma=gamma))
    acc, fmt, risk, tool_reward = expected(case, tool, well_formed, alpha, gamma)
    assert (got.accuracy, got.format, got.risk, got.tool) == (acc, fmt, risk, tool_reward)
    assert got.total == pytest.approx(acc + fmt + risk + tool_reward)


def test_the_format_gate_zeroes_a_malformed_trajectory() -> None:
    gated = RewardConfig(format_gate=True)
    assert trajectory_reward(Outcome("fake", "fake", False, True), gated).total == 0.0
    assert trajectory_reward(Outcome("fake", "fake", True, True), gated).total == pytest.approx(2.2)


def test_the_format_gate_holds_in_the_trl_path_too() -> None:
    """TRL sums the weighted terms; with the gate each term is multiplied by R_format, so the sum is the gated total."""
    config = RewardConfig(format_gate=True, lam=0.5)
    rolled = [{"predicted": "fake", "gold": "fake", "well_formed": False, "used_tool": True},
              {"predicted": "real", "gold": "fake", "well_formed": True, "used_tool": True}]
    columns = [f(["ignored"] * 2, outcome=rolled) for f in reward_functions(config)]
    weighted = [sum(w * column[i] for w, column in zip(reward_weights(config), columns)) for i in range(2)]
    expected = [trajectory_reward(Outcome(**o), config).total for o in rolled]
    assert weighted == pytest.approx(expected) and weighted[0] == 0.0
    ungated = [f(["ignored"] * 2, outcome=rolled) for f in reward_functions(RewardConfig(lam=0.5))]
    assert ungated[0][0] == 1.0, "without the gate a malformed right answer keeps its accuracy"


def test_lambda_zero_is_the_papers_no_risk_ablation() -> None:
    config = RewardConfig(lam=0.0)
    assert reward_weights(config) == [1.0, 1.0, 0.0, 1.0]
    assert trajectory_reward(Outcome("fake", "real", True, False), config).total == 1.0
    with pytest.raises(ValueError):
        RewardConfig(lam=-1.0)


def test_an_equal_group_has_zero_advantages() -> None:
    assert group_advantages([1.0] * 8, 8) == [0.0] * 8
    advantages = group_advantages([2.0, 0.0, 2.0, 0.0, 1.0, 1.0, 1.0, 1.0], 4)
    assert advantages[4:] == [0.0] * 4 and advantages[0] > 0 > advantages[1]
    assert sum(advantages[:4]) == pytest.approx(0.0)


positive = st.floats(0.01, 10, allow_nan=False)
fraction = st.floats(0, 0.99, allow_nan=False)


@given(positive, positive, positive, fraction, fraction, st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from(["fake", "real"]))
def test_malformed_below_wrong_below_right(alpha: float, gamma: float, lam: float, pos: float, neg: float,
                                            tool_m: bool, tool_w: bool, tool_r: bool, gold: str) -> None:
    config = RewardConfig(alpha=alpha, gamma=gamma, lam=lam, r_tool_pos=pos, r_tool_neg=neg)
    wrong_label = "real" if gold == "fake" else "fake"
    malformed = trajectory_reward(Outcome(None, gold, False, tool_m), config).total
    wrong = trajectory_reward(Outcome(wrong_label, gold, True, tool_w), config).total
    right = trajectory_reward(Outcome(gold, gold, True, tool_r), config).total
    assert malformed < wrong < right


@given(st.sampled_from([None, "fake", "real"]), st.sampled_from(["fake", "real"]), st.booleans(), positive, positive)
def test_no_tool_means_no_tool_reward(predicted: str | None, gold: str, well_formed: bool, alpha: float, gamma: float) -> None:
    assert trajectory_reward(Outcome(predicted, gold, well_formed, False), RewardConfig(alpha=alpha, gamma=gamma)).tool == 0.0


def test_trl_reward_functions_read_completions_or_the_rollout_outcome() -> None:
    accuracy, fmt, risk, tool = reward_functions(RewardConfig(lam=0.5))
    completions = ["<think>a</think><answer>fake</answer>", "<answer>real</answer>", "gibberish",
                   [{"role": "assistant", "content": "<think>b</think><answer>real</answer>"}]]
    gold = ["fake", "fake", "real", "real"]
    assert accuracy(completions, gold=gold) == [1.0, 0.0, 0.0, 1.0]
    assert fmt(completions, gold=gold) == [1.0, 0.0, 0.0, 1.0]
    assert risk(completions, gold=gold) == [0.0, -1.0, -1.0, 0.0]
    assert [f.__name__ for f in (accuracy, fmt, risk, tool)] == ["accuracy", "format", "risk", "tool"]
    assert reward_weights(RewardConfig(lam=0.5)) == [1.0, 1.0, 0.5, 1.0]
    rolled = [{"predicted": "fake", "gold": "fake", "well_formed": True, "used_tool": True}]
    assert tool(["ignored"], outcome=rolled) == [0.2]


def test_the_papers_rule_charges_a_call_that_did_not_answer_and_ours_does_not() -> None:
    """Paper line 143 penalises ineffective tool use: a call refused, failed or 'unavailable' before a wrong answer
    costs r- in the paper's rule; the 'answered' rule (ours) counts only calls that ran and answered."""
    rolled = [{"predicted": "real", "gold": "fake", "well_formed": True, "used_tool": True, "tool_answered": False},
              {"predicted": "fake", "gold": "fake", "well_formed": True, "used_tool": True, "tool_answered": False},
              {"predicted": "fake", "gold": "fake", "well_formed": True, "used_tool": True, "tool_answered": True},
              {"predicted": "fake", "gold": "fake", "well_formed": True, "used_tool": False}]
    assert RewardConfig().tool_use == "called"
    paper = reward_functions(RewardConfig())[3]
    ours = reward_functions(RewardConfig(tool_use="answered"))[3]
    assert paper(["ignored"] * 4, outcome=rolled) == [-0.2, 0.2, 0.2, 0.0]
    assert ours(["ignored"] * 4, outcome=rolled) == [0.0, 0.0, 0.2, 0.0]
    with pytest.raises(ValueError):
        RewardConfig(tool_use="sometimes")  # type: ignore[arg-type]
