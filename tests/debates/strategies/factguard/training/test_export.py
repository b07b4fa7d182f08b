"""Trajectories recorded at the metering layer, and their SFT export: the rule filter, both formats, exact re-rendering."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage
from pydantic import BaseModel

from debates.eval.run.batch import BatchRunner
from debates.session import RunSession
from debates.eval.records import RunManifest
from debates.config_loader import load_config, with_overrides
from debates.strategies.factguard.training.export import drop_reason, export_sft
from debates.strategies.factguard.training.rewards import RewardConfig, trajectory_reward
from debates.strategies.factguard.training.trajectories import (
    RecordedCall, TrajectoryRecorder, TrajectoryRow, outcome_of, read_trajectories,
)
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.recording import chat_messages, llm_messages
from m3d_agents.backends.transports.lean_http import openai_messages
from debates.strategies.check import CheckDiagnostics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample, VideoRef
from tests.support.old_diagnostics import OLD_FACTGUARD
from tests.support.sft_rerender import rerender
from tests.support.scripted import ScriptedClient, scripted_backend, text_of
from tests.support.videos import make_clip

SCOUT = '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 1, "end_s": 3}}</tool_call>'
PAST_END = '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 30, "end_s": 40}}</tool_call>'
PROBE = '<tool_call>{"name": "fact_probe", "arguments": {"query": "flood in town"}}</tool_call>'
# title: (gold, first turn, second turn or None)
PLAN = {
    "post one": ("fake", "<think>clear</think><answer>fake</answer>", None),
    "post two": ("real", "<think>clear</think><answer>real</answer>", None),
    "post three": ("fake", f"<think>look closer</think>{SCOUT}", "<think>edited</think><answer>fake</answer>"),
    "post four": ("real", f"<think>look closer</think>{SCOUT}", "<think>fine</think><answer>real</answer>"),
    "post five": ("fake", "<think>looks fine</think><answer>real</answer>", None),
    "post six": ("real", "no idea at all", None),
    "post seven": ("fake", f"<think>look later</think>{PAST_END}", "<think>edited</think><answer>fake</answer>"),
    "post eight": ("real", f"<think>search</think>{PROBE}", "<think>fine</think><answer>real</answer>"),
}


def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    prompt = text_of(messages)
    title = next(t for t in PLAN if t in prompt)
    _, first, second = PLAN[title]
    return second if second is not None and "Results of your tool calls" in prompt else first


class HfMessage(BaseModel):
    role: str
    content: str | list[dict[str, str]]


class HfRow(BaseModel):
    messages: list[HfMessage]
    images: list[str]
    reward: dict[str, float] | None


async def record(tmp_path: Path, config_name: str = "factguard") -> tuple[Path, ScriptedClient]:
    clip = make_clip(tmp_path / "clip.mp4", seconds=4)
    samples = [Sample(text=title, video=VideoRef(path=clip), gold_label=gold) for title, (gold, _, _) in PLAN.items()]
    client = ScriptedClient(respond, vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = with_overrides(load_config(config_name), describe_frames=False, parse_retries=1, artifacts_dir=str(tmp_path / "grids"))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    run_dir = tmp_path / "run"
    manifest = RunManifest(config=str(path), dataset="test", backend="scripted", seed=0, taxonomy="binary")
    async with RunSession(config, pool, backend="scripted", retrieval="off") as session:
        outcome = await BatchRunner(str(path), samples, session, run_dir, manifest, concurrency=2,
                                    recorder=TrajectoryRecorder(run_dir)).run()
    assert len(outcome.rows) == len(PLAN) and all(r.status != "error" for r in outcome.rows), [r.error for r in outcome.rows]
    return run_dir, client


def wire(messages: Sequence[LLMMessage]) -> str:
    info = {"vision": True, "multiple_system_messages": False}
    return json.dumps(openai_messages(messages, info), sort_keys=True)  # type: ignore[arg-type]


async def test_the_export_keeps_right_trajectories_and_counts_the_rest(tmp_path: Path) -> None:
    run_dir, client = await record(tmp_path)
    trajectories = read_trajectories(run_dir)
    assert len(trajectories) == len(PLAN) and sum(len(t.calls) for t in trajectories) == len(client.calls)
    report = export_sft(run_dir, tmp_path / "sft.jsonl")
    assert report.kept == 4 and report.dropped == {"wrong_answer": 1, "malformed": 1, "invalid_tool_action": 1, "unavailable_tool": 1}, (
        "a window past the video's end and a search without a searcher are not demonstrations")
    rows = [HfRow.model_validate(json.loads(line)) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 4, "one conversation per sample: the first call is folded into the second"
    assert all(Path(image).is_file() for row in rows for image in row.images)
    assert {m.role for r in rows for m in r.messages} == {"system", "user", "assistant"}, "observations keep inference's role"
    with_tools = [r for r in rows if sum(m.role == "user" for m in r.messages) == 2]
    assert len(with_tools) == 2 and all(len(r.images) == 8 + 1 for r in with_tools)
    assert all(r.reward is not None and set(r.reward) == {"accuracy", "format", "risk", "tool", "total"} for r in rows)
    assert [r.reward["total"] for r in with_tools if r.reward] == pytest.approx([2.2, 2.2])
    assert report.review is not None and Path(report.review).is_file()


@pytest.mark.parametrize("planted", ["sft.jsonl", "sft.review.jsonl"])
async def test_the_export_never_writes_through_a_planted_link(tmp_path: Path, planted: str) -> None:
    run_dir, _ = await record(tmp_path)
    (tmp_path / "precious.txt").write_text("the user's own file\n")
    (tmp_path / planted).symlink_to(tmp_path / "precious.txt")
    with pytest.raises(InputError, match=f"{planted}: is a symbolic link"):
        export_sft(run_dir, tmp_path / "sft.jsonl", review=2)
    assert (tmp_path / "precious.txt").read_text() == "the user's own file\n" and (tmp_path / planted).is_symlink()


async def test_exported_messages_re_render_to_the_prompts_sent_byte_for_byte(tmp_path: Path) -> None:
    run_dir, client = await record(tmp_path)
    sent = {wire(call.messages) for call in client.calls}
    for trajectory in read_trajectories(run_dir):
        images = {f"images/{p.stem}.png": p.read_bytes() for p in (run_dir / "images").glob("*.png")}
        for call in trajectory.calls:
            assert wire(llm_messages(call.messages, images)) in sent
    export_sft(run_dir, tmp_path / "sft.jsonl")
    for line in (tmp_path / "sft.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["messages"][-1]["role"] == "assistant"
        assert wire(rerender(row["messages"][:-1], row["images"])) in sent


async def test_the_llamafactory_format_has_one_placeholder_per_image(tmp_path: Path) -> None:
    run_dir, _ = await record(tmp_path)
    export_sft(run_dir, tmp_path / "lf.jsonl", fmt="llamafactory")
    for line in (tmp_path / "lf.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert all(isinstance(m["content"], str) for m in row["messages"])
        assert sum(m["content"].count("<image>") for m in row["messages"]) == len(row["images"])


async def test_the_teacher_hint_reaches_no_exported_message(tmp_path: Path) -> None:
    run_dir, client = await record(tmp_path, "factguard-teacher")
    assert any("the correct answer for this post" in call.prompt for call in client.calls)
    export_sft(run_dir, tmp_path / "sft.jsonl")
    exported = (tmp_path / "sft.jsonl").read_text()
    assert exported and "the correct answer for this post" not in exported and "worked example" not in exported


def test_recording_round_trips_every_message_kind() -> None:
    from autogen_core import FunctionCall
    from autogen_core.models import AssistantMessage, FunctionExecutionResult, FunctionExecutionResultMessage, SystemMessage, UserMessage

    messages: list[LLMMessage] = [
        SystemMessage(content="sys"), UserMessage(content="hi", source="user"),
        AssistantMessage(content=[FunctionCall(id="1", name="f", arguments="{}")], thought="t", source="a"),
        FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="r", call_id="1", name="f", is_error=False)]),
        AssistantMessage(content="done", source="a"),
    ]
    images: dict[str, bytes] = {}
    assert wire(llm_messages(chat_messages(messages, images), images)) == wire(messages)


OLD_KEPT = ("turns", "tool_calls", "used_tools", "tool_refusals", "format_ok", "teacher_hint", "agent_turns", "stop_reason")
"""The diagnostics a trajectory row kept before they were typed."""


def trajectory(diagnostics: Any) -> TrajectoryRow:
    return TrajectoryRow.model_validate({
        "sample_id": "s", "config": "c", "taxonomy": "binary", "gold": "fake", "gold_binary": "fake", "label": "fake",
        "predicted_binary": "fake", "abstained": False, "diagnostics": diagnostics,
        "calls": [RecordedCall(agent="verifier", role="verifier", messages=[], completion="x").model_dump()],
    })


def test_an_old_trajectory_row_is_read_typed_and_filtered_as_before() -> None:
    old = trajectory({k: OLD_FACTGUARD[k] for k in OLD_KEPT})
    assert isinstance(old.diagnostics, FactGuardDiagnostics) and old.diagnostics.teacher_hint == "the gold label is fake"
    assert drop_reason(old) is None
    refused = trajectory({**{k: OLD_FACTGUARD[k] for k in OLD_KEPT}, "tool_refusals": {"clip_scout": 1}})
    assert drop_reason(refused) == "invalid_tool_action"


def test_the_tool_reward_counts_every_call_made_and_the_answered_rule_only_calls_that_answered() -> None:
    base = {k: OLD_FACTGUARD[k] for k in OLD_KEPT}
    unavailable = outcome_of(trajectory({**base, "used_tools": True, "tool_calls_answered": 0}))
    answered = outcome_of(trajectory({**base, "used_tools": True, "tool_calls_answered": 1}))
    old = outcome_of(trajectory({**base, "used_tools": True}))
    assert unavailable is not None and unavailable.used_tool and not unavailable.tool_answered
    assert answered is not None and answered.used_tool and answered.tool_answered
    assert old is not None and old.used_tool and old.tool_answered, "a row from before the count: every call made answered"
    wrong = replace(unavailable, predicted="real" if unavailable.gold == "fake" else "fake")
    assert trajectory_reward(wrong).tool == -0.2, "the paper's rule: an ineffective call before a wrong answer costs r-"
    assert trajectory_reward(wrong, RewardConfig(tool_use="answered")).tool == 0.0, "ours: it costs nothing"


def test_a_trajectory_without_factguards_format_check_is_never_kept_unchecked() -> None:
    checked_once = trajectory(CheckDiagnostics(attempts=1))
    assert drop_reason(checked_once) == "no_format_check", "a default would have passed it as well formed"
    outcome = outcome_of(checked_once)
    assert outcome is not None and outcome.well_formed and not outcome.used_tool

