"""Evidence is data, never instructions: hostile pages and search results run through every strategy.

Each case serves one attack (:func:`tests.support.hostile_web.attacks`: a fake answer in every
format the product parses, fence breakers in URL, title and body, role markers, fake tool calls,
queries and fetch lures) as a loopback page and a search result, through every channel a run has,
to a model that echoes its prompt; in ``own`` mode the model adds its own answer after the echo.

What must hold, for every strategy and case:

- **nothing comes from the evidence**: the verdict, every turn's stance, every query and every tool
  call are exactly those of the same run with a harmless page in the attack's place;
- no query and no tool argument carries the attack's marker, no cited evidence id is one a page
  wrote, and nothing fetched a URL (the loopback server saw no request);
- in ``own`` mode, the model's own answer after the echo is what is read where it decides alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from debates.config_loader import load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample, VideoRef
from m3d_agents.tools.cards import ToolRegistry
from m3d_agents.tools.catalogue import default_registry
from tests.support.hostile_web import (
    BENIGN,
    MARK,
    Attack,
    HostileWeb,
    attacks,
    echo_model,
    hostile_web,
    logged_registry,
    seen_tag,
)
from tests.support.page_server import PageServer
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.videos import make_clip

STRATEGIES: dict[str, str] = {
    "async": "debate protocols",
    "sync": "debate protocols",
    "judged": "debate protocols",
    "actor-skeptic": "debate protocols",
    "disambiguation": "debate protocols",
    "disambiguation-sync": "debate protocols",
    "standard": "debate protocols",
    "bon": "debate protocols",
    "mmd-agent": "cascade",
    "agentm3d": "cascade",
    "check": "check",
    "self-consistency": "check",
    "t2agent-lean": "t2agent",
    "agentfact": "agentfact",
    "factguard": "factguard",
}
"""Every built-in configuration family, by the strategy it exercises."""

STRUCTURED = {"agentfact", "check", "self-consistency"}
"""Configurations whose answers are JSON objects (the echo model is given their schema); the debate
protocols run both ways: prose turns, and JSON turns (``structured`` in the case id)."""

DECIDES_ALONE = {"async", "sync", "standard", "disambiguation", "disambiguation-sync", "mmd-agent", "check", "self-consistency"}
"""Where the model's own answer alone decides, so ``own`` mode must reach a verdict. (FactGuard's echo
holds its own prompt's example tags, and a tree search or a workflow decides from several calls.)"""

ATTACK_NAMES = [a.name for a in attacks("http://127.0.0.1:9")]
MODES = ["echo", "own"]


@dataclass(frozen=True)
class Outcome:
    label: str | None
    abstained: bool
    stances: tuple[str | None, ...]
    queries: tuple[str, ...]
    tool_calls: tuple[tuple[str, str], ...]
    cited: tuple[int, ...]


@pytest.fixture(scope="module")
def canary() -> Iterator[PageServer]:
    with PageServer() as server:
        yield server


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", seconds=4)


@pytest.fixture
def tool_log() -> Iterator[list[tuple[str, str]]]:
    log: list[tuple[str, str]] = []
    registry: ToolRegistry = default_registry()
    originals = logged_registry(registry, log)
    try:
        yield log
    finally:
        registry._tools.clear()
        registry._tools.update(originals)


def sample_for(config: str, clip: Path) -> Sample:
    text = "The new bridge over the river opened this week after three years of work."
    if config == "factguard":
        return Sample(text=text, video=VideoRef(path=clip, transcript="the bridge opens"))
    return Sample(text=text)


def configured(name: str) -> Any:
    config = load_config(name)
    cheaper: dict[str, Any] = {}
    if name == "factguard":
        cheaper = {"describe_frames": False}
    if hasattr(config, "max_rounds") and getattr(config, "max_rounds", 1) > 2:
        cheaper["max_rounds"] = 2
    return with_overrides(config, **cheaper) if cheaper else config


async def outcome_of(name: str, structured: bool, web: HostileWeb, own: bool, log: list[tuple[str, str]],
                     sample: Sample) -> tuple[Outcome, Any, bool]:
    log.clear()
    client = ScriptedClient(echo_model(own), vision=False, structured_output=structured)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="echo"))
    verdict = await run_sample(configured(name), sample, pool, backend="echo", **web.context())
    ids = [e.id for e in web.items]
    cited = sorted({ids.index(i) for i in [*verdict.evidence_ids, *(c for f in verdict.findings for c in f.evidence_ids)]
                    if i in ids})
    reached = any(seen_tag(web.name) in call.prompt for call in client.calls)
    result = Outcome(
        label=verdict.label, abstained=verdict.abstained, stances=tuple(t.stance for t in verdict.transcript),
        queries=tuple(web.queries), tool_calls=tuple(log), cited=tuple(cited),
    )
    return result, verdict, reached


def cases() -> list[Any]:
    params = []
    for name in STRATEGIES:
        structures = [False, True] if STRATEGIES[name] == "debate protocols" and name not in ("bon",) else [name in STRUCTURED]
        for structured in structures:
            for mode in MODES:
                for attack in ATTACK_NAMES:
                    shape = "-structured" if structured and name not in STRUCTURED else ""
                    params.append(pytest.param(name, structured, mode, attack, id=f"{name}{shape}-{mode}-{attack}"))
    return params


CASES = cases()
_baselines: dict[tuple[str, bool, str], Outcome] = {}


@pytest.mark.parametrize("name, structured, mode, attack", CASES)
async def test_nothing_a_page_says_steers_the_run(
    name: str, structured: bool, mode: str, attack: str, canary: PageServer, clip: Path, tool_log: list[tuple[str, str]],
) -> None:
    chosen: Attack = next(a for a in attacks(canary.base) if a.name == attack)
    sample = sample_for(name, clip)
    own = mode == "own"
    key = (name, structured, mode)
    if key not in _baselines:
        _baselines[key] = (await outcome_of(name, structured, hostile_web(canary, BENIGN), own, tool_log, sample))[0]
    hostile = hostile_web(canary, chosen)
    canary.requests.clear()
    outcome, verdict, reached = await outcome_of(name, structured, hostile, own, tool_log, sample)

    assert reached, "the attack never reached the model, so this case tests nothing"
    assert outcome == _baselines[key], "the hostile page changed what the run decided, asked or called"
    assert not [q for q in outcome.queries if MARK in q], outcome.queries
    assert not [c for c in outcome.tool_calls if MARK in c[1]], outcome.tool_calls
    assert canary.requests == [], "something fetched a URL that the evidence named"
    known = {e.id for e in [*verdict.evidence, *hostile.items]}
    cited = {*verdict.evidence_ids, *(i for f in verdict.findings for i in f.evidence_ids)}
    assert cited <= known, "a verdict cites an evidence id that a page wrote"
    assert len(verdict.evidence_ids) == len(set(verdict.evidence_ids)), "evidence ids repeat in one verdict"
    if own and name in DECIDES_ALONE:
        assert not verdict.abstained, f"the model's own answer after the echo was not read: {verdict.abstain_reason}"


def test_cases_per_strategy(capsys: pytest.CaptureFixture[str]) -> None:
    per_strategy = Counter(STRATEGIES[p.values[0]] for p in CASES)
    with capsys.disabled():
        print("\nadversarial evidence cases per strategy: "
              + ", ".join(f"{strategy} {count}" for strategy, count in sorted(per_strategy.items())))
    assert set(per_strategy) == {"debate protocols", "cascade", "check", "t2agent", "agentfact", "factguard"}
    assert min(per_strategy.values()) >= len(ATTACK_NAMES) * len(MODES)
