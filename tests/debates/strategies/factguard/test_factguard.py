"""The FactGuard loop with a scripted model and a generated clip: turns, tools, budgets, vision or text, abstention."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from autogen_core import Image as AgentImage
from autogen_core.models import UserMessage

from debates.strategy import STRATEGIES
from debates.config_loader import available_configs, load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample, VideoRef
from m3d_agents.verdict import TranscriptTurn
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.videos import make_clip

PROBE = '<tool_call>{"name": "fact_probe", "arguments": {"query": "city flood May 2020"}}</tool_call>'
SCOUT = '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 2, "end_s": 4}}</tool_call>'


class Searcher:
    async def answer(self, query: str, sample: Sample, ledger: object = None) -> list[Evidence]:
        return [Evidence(kind="answer", url="https://apnews.com/flood", domain="apnews.com", title="City floods",
                         text="Heavy rain flooded the city on 12 May 2020.")]


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mp4", seconds=6)


def images_in(call: Any) -> int:
    return sum(1 for m in call.messages if isinstance(m, UserMessage) and not isinstance(m.content, str)
               for part in m.content if isinstance(part, AgentImage))


async def run(script: list[str], sample: Sample, *, vision: bool = True, tmp: Path | None = None, **settings: Any):  # type: ignore[no-untyped-def]
    client = ScriptedClient(list(script), vision=vision)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = load_config("factguard")
    config = with_overrides(config, describe_frames=False, artifacts_dir=str(tmp) if tmp else None, **settings)
    turns: list[TranscriptTurn] = []
    verdict = await run_sample(config, sample, pool, backend="scripted", searchers={"web": Searcher()}, on_turn=turns.append)
    return verdict, client, turns


def post(clip: Path | None) -> Sample:
    return Sample(text="Flood sweeps the city centre today", video=VideoRef(path=clip, transcript="the water is rising"))


async def test_an_immediate_answer_takes_one_call(clip: Path) -> None:
    verdict, client, turns = await run(["<think>The title is plain news.</think><answer>fake</answer>"], post(clip))
    assert verdict.label == "fake" and len(client.calls) == 1
    assert [t.speaker for t in verdict.transcript] == ["verifier"] == [t.speaker for t in turns]
    assert verdict.diagnostics.used_tools is False and verdict.diagnostics.format_ok is True
    assert images_in(client.calls[0]) == 8, "the eight overview frames"
    assert "the water is rising" in client.calls[0].prompt


async def test_tools_then_an_answer(clip: Path, tmp_path: Path) -> None:
    script = [f"<think>Need the date and a closer look.</think>{PROBE}{SCOUT}", "<think>Old footage.</think><answer>fake</answer>"]
    verdict, client, turns = await run(script, post(clip), tmp=tmp_path / "grids")
    assert len(client.calls) == 2 and verdict.label == "fake"
    second = client.calls[1]
    assert "<<<QUOTED " in second.prompt and "City floods" in second.prompt and "apnews.com" in second.prompt
    assert "2.25 s" in second.prompt or "2.20 s" in second.prompt
    assert images_in(second) == 8 + 1, "the overview frames and exactly one grid"
    assert [t.speaker for t in verdict.transcript] == ["verifier", "tool_desk", "verifier"]
    assert [t.speaker for t in turns] == ["verifier", "tool_desk", "verifier"], "every turn is streamed"
    assert verdict.diagnostics.tool_calls == {"fact_probe": 1, "clip_scout": 1}
    assert verdict.diagnostics.tool_calls_answered == 2 and verdict.diagnostics.tool_answered
    grids = list((tmp_path / "grids").glob("*.png"))
    assert len(grids) == 1 and len(verdict.evidence_ids) == 2
    assert "Tools are now closed" in second.prompt


async def test_tools_on_the_last_turn_are_retried_then_abstain(clip: Path) -> None:
    script = [f"<think>t</think>{PROBE}"] + [f"<think>still</think>{SCOUT}"] * 3
    verdict, client, _ = await run(script, post(clip), parse_retries=2)
    assert verdict.abstained and "unreadable turn after 3 attempts" in (verdict.abstain_reason or "")
    assert "tools are closed" in (verdict.abstain_reason or "")
    assert len(client.calls) == 4 and verdict.accounting.parse_retries == 2


async def test_a_second_clip_scout_gets_the_budget_message(clip: Path) -> None:
    script = [f"<think>t</think>{SCOUT}", f"<think>again</think>{SCOUT}", "<think>ok</think><answer>real</answer>"]
    verdict, client, _ = await run(script, post(clip), max_turns=3)
    assert verdict.label == "real"
    assert "clip_scout budget used (1 per sample)" in client.calls[2].prompt
    assert verdict.diagnostics.tool_refusals == {"clip_scout": 1}
    assert verdict.diagnostics.tool_calls == {"clip_scout": 2}


async def test_a_text_only_backend_gets_the_grid_described(clip: Path) -> None:
    script = [f"<think>t</think>{SCOUT}", "<think>ok</think><answer>real</answer>"]
    verdict, client, _ = await run(script, post(clip), vision=False)
    assert all(images_in(call) == 0 for call in client.calls)
    assert "You cannot see images" in client.calls[0].prompt and "mean colour" in client.calls[0].prompt
    assert "top left:" in client.calls[1].prompt and "bottom right:" in client.calls[1].prompt
    assert verdict.label == "real"


async def test_without_a_video_file_the_check_still_answers(clip: Path) -> None:
    script = [f"<think>t</think>{SCOUT}", "<think>ok</think><answer>real</answer>"]
    verdict, client, _ = await run(script, post(None))
    assert "clip_scout: unavailable: no video file" in client.calls[1].prompt
    assert verdict.diagnostics.video_seen is False and verdict.label == "real"
    assert verdict.diagnostics.used_tools and verdict.diagnostics.tool_calls_answered == 0
    assert not verdict.diagnostics.tool_answered, "a call answered 'unavailable' earns no tool reward"


async def test_only_the_calls_that_answered_count_for_the_tool_reward() -> None:
    script = [f"<think>t</think>{PROBE}{SCOUT}", "<think>ok</think><answer>fake</answer>"]
    verdict, _, _ = await run(script, post(None))
    assert verdict.diagnostics.tool_calls == {"fact_probe": 1, "clip_scout": 1}
    assert verdict.diagnostics.tool_calls_answered == 1, "FactProbe answered; ClipScout had no video"


async def test_a_fresh_team_per_sample(clip: Path) -> None:
    client = ScriptedClient(["<think>a</think><answer>fake</answer>", "<think>b</think><answer>real</answer>"], vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = with_overrides(load_config("factguard"), describe_frames=False)
    await run_sample(config, post(clip), pool, backend="scripted")
    await run_sample(config, Sample(text="another post", video=VideoRef(path=clip)), pool, backend="scripted")
    assert "<think>a</think>" not in client.calls[1].prompt and len(client.calls[1].messages) == 2


async def test_cancellation_stops_the_model_call_at_once(clip: Path) -> None:
    client = ScriptedClient(["<think>slow</think><answer>fake</answer>"], vision=True, delay_s=30)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = with_overrides(load_config("factguard"), describe_frames=False)
    task = asyncio.ensure_future(run_sample(config, post(clip), pool, backend="scripted"))
    while not client.calls:
        await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    started = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.time() - started < 5


async def test_the_teacher_is_told_the_gold_label_and_it_is_recorded_apart(clip: Path) -> None:
    client = ScriptedClient(["<think>t</think><answer>fake</answer>"], vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = with_overrides(load_config("factguard-teacher"), describe_frames=False)
    sample = Sample(text="Flood today", video=VideoRef(path=clip), gold_label="fake")
    verdict = await run_sample(config, sample, pool, backend="scripted")
    hint = verdict.diagnostics.teacher_hint
    assert 'is "fake"' in hint and hint in client.calls[0].prompt


def test_the_strategy_and_its_configurations_are_registered() -> None:
    assert "factguard" in STRATEGIES.names()
    assert {"factguard", "factguard-teacher"} <= set(available_configs())
