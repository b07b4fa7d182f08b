"""Model calls per sample of ``mmd-agent-bon`` (the paper's MMD-Agent + BoN: the chained cascade with
uniform best-of-N), ``agentm3d`` (planner, critics, Alg. 1 over all N) and ``agentm3d-lazy``
(planner, critics, lazy early stop, unanimous skip).

Runs the configurations on 50 posts of ../shared/data/mediaeval2016-dev with a scripted backend (the test double of
tests/support/scripted.py), so the figures count calls, not model quality. The backend is text only, so the image
description comes from OCR and metadata and costs no call. The scripted answers follow a fixed seeded
distribution, drawn per post and per candidate from a string seed:
- the planner asks for best-of-N on a share of posts (``--level1-rate``, default 0.3); the last lines
  repeat agentm3d at the escalation the paper reports, 69.1% on MMFakeBench and 77.2% on its
  Combined benchmark (paper line 228), each labelled, or, with ``--run DIR``, at the escalation a
  real run measured (the ``escalation`` of its ``run.json``, else counted from its rows);
- each modality check finds a distortion with probability 0.25, and a candidate answer agrees
  with that with probability 0.8;
- the judge's reward and a critic's bare score are uniform on [0, 1].

    python benchmarks/calls_per_sample.py [--samples 50] [--n 5] [--level1-rate 0.3] [--run runs/agentm3d-mmfakebench-vllm]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any, Mapping, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autogen_core.models import LLMMessage  # noqa: E402

from debates.debate_engine.config import TURN_POLICY_SETTINGS, DebateConfig  # noqa: E402
from debates.config_loader import load_config  # noqa: E402
from debates.eval.score.report import summarise  # noqa: E402
from debates.session import run_sample  # noqa: E402
from m3d_agents.backends.factory import BackendPool  # noqa: E402
from debates.debate_engine.diagnostics import DebateDiagnostics  # noqa: E402
from m3d_agents.sample import Sample  # noqa: E402
from tests.support.scripted import ScriptedClient, scripted_backend, text_of  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "mediaeval2016-dev"
PAPER_ESCALATION = {"MMFakeBench": 0.691, "Combined": 0.772}
"""The share of posts AgentM3D's planner escalated to best-of-N on each of its data sets (paper line 228)."""
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff"}


def load_posts(folder: Path, count: int) -> list[Sample]:
    """The first ``count`` posts whose first image is on disk, one post per image, fake and real alternating."""
    images = {p.stem: p for p in (folder / "images").rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES}
    by_label: dict[str, list[Sample]] = {"fake": [], "real": []}
    used: set[str] = set()
    with (folder / "posts.txt").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            image_id = (row.get("image_id(s)") or "").split(",")[0].strip()
            label = (row.get("label") or "").strip()
            text = (row.get("post_text") or "").strip()
            if label not in by_label or image_id in used or image_id not in images or not text:
                continue
            used.add(image_id)
            by_label[label].append(Sample(id=row["post_id"], text=text, images=[images[image_id]], gold_label=label))
    mixed = [s for pair in zip(by_label["fake"], by_label["real"]) for s in pair]
    return mixed[:count]


def post_of(message: str) -> str:
    """The post's text (the first quoted block), so that a chained step, whose request also holds the
    earlier steps' answers, draws the same truth as the other steps of its post."""
    found = re.search(r'"""\n(.*?)\n"""', message, re.DOTALL)
    return found.group(1) if found else message


def measured_escalation(run: Path) -> float:
    """The escalation a run measured: its ``run.json`` figure (or its rows', counted afresh)."""
    escalation = summarise(run).metrics.escalation
    if escalation is None:
        raise SystemExit(f"{run}: no sample of this run had a planner (run an AgentM3D configuration)")
    return escalation.share


ACTIONS = {"its TEXT is true": ("TEXT REFUTE", "TEXT SUPPORT"), "its IMAGE is genuine": ("IMAGE REFUTE", "IMAGE SUPPORT"),
           "image and its text belong together": ("MISMATCH", "MATCH")}


@dataclass
class SeededScript:
    """Answers every kind of call from a distribution seeded by the post and the candidate."""

    level1_rate: float

    def __call__(self, messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        seed = int(kwargs.get("seed", 0) or 0)
        system, last = text_of(messages[:1]), text_of(messages[-1:])
        post = post_of(text_of(messages[1:2]))
        if "strict grader" in last:
            candidate = text_of(messages[-2:-1])
            return f"SCORE: {random.Random(f'reward|{candidate}').random():.3f}"
        if "checking effort" in system:
            hard = random.Random(f"plan|{post}").random() < self.level1_rate
            return "[BON level-1]" if hard else "[BON level-0]"
        if "You are a critic" in system:
            return f"{random.Random(f'critique|{text_of(messages)}').random():.3f}"
        if "internal logic, not for its truth" in last:
            return '{"consistent": true, "issues": [], "rationale": "The claim is internally consistent."}'
        for marker, (distorted, clear) in ACTIONS.items():
            if marker in system or marker in last:
                truth = random.Random(f"truth|{marker}|{post}").random() < 0.25
                agrees = random.Random(f"agree|{marker}|{post}|{seed}").random() < 0.8
                action = distorted if truth == agrees else clear
                return f"Candidate with seed {seed} checked its part.\nFinish[{action}]\nCONFIDENCE: 0.7"
        raise AssertionError(f"unexpected prompt: {system[:80]}")


def with_n(config: DebateConfig, n: int, **policy: object) -> DebateConfig:
    config = config.model_copy(deep=True)
    for seat in config.seats:
        seat.turn_policy = TURN_POLICY_SETTINGS.validate_python({**seat.turn_policy.model_dump(), "n": n, **policy})
    return config


@dataclass
class Run:
    calls: list[int]
    by_role: Counter[str]
    escalated: int
    m_star: Counter[int]
    saved: int


async def run_config(name: str, samples: list[Sample], n: int, level1_rate: float, **policy: object) -> Run:
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient(SeededScript(level1_rate)), name="bench"))
    loaded = load_config(name)
    assert isinstance(loaded, DebateConfig), f"{name} is not a debate configuration"
    config = with_n(loaded, n, **policy)
    calls: list[int] = []
    by_role: Counter[str] = Counter()
    m_star: Counter[int] = Counter()
    escalated = saved = 0
    for i, sample in enumerate(samples):
        verdict = await run_sample(config, sample, pool, backend="bench", seed=i)
        calls.append(verdict.accounting.model_calls)
        by_role.update({role: usage.calls for role, usage in verdict.accounting.by_role.items()})
        if not isinstance(verdict.diagnostics, DebateDiagnostics):
            raise TypeError(f"{name} is not a debate: its verdicts have no turn-policy selection")
        selection = verdict.diagnostics.selection
        planner = verdict.diagnostics.planner_escalated
        escalated += int(planner if planner is not None else selection.escalated)
        m_star.update(selection.m_star)
        saved += selection.saved_calls.total or 0
    return Run(calls, by_role, escalated, m_star, saved)


def describe(name: str, run: Run, count: int) -> str:
    roles = ", ".join(f"{role} {calls / count:.2f}" for role, calls in sorted(run.by_role.items()))
    m_star = " ".join(f"{m}:{k}" for m, k in sorted(run.m_star.items())) or "-"
    return (
        f"{name:14s} {mean(run.calls):6.2f} calls/sample  (escalated {run.escalated}/{count}; per role: {roles};"
        f" m* counts {m_star}; scoring calls saved {run.saved})"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--level1-rate", type=float, default=0.3, help="share of posts the scripted planner escalates")
    parser.add_argument("--run", type=Path, default=None,
                        help="a run folder of an AgentM3D configuration: also model agentm3d at the escalation it measured")
    args = parser.parse_args()
    measured = measured_escalation(args.run) if args.run is not None else None
    if not DATA.is_dir():
        raise SystemExit(f"needs the shared data set at {DATA}")
    samples = load_posts(DATA, args.samples)
    print(f"{len(samples)} MediaEval 2016 dev posts, N = {args.n}, scripted planner level-1 rate {args.level1_rate}")
    uniform = await run_config("mmd-agent-bon", samples, args.n, args.level1_rate)
    agentm3d = await run_config("agentm3d", samples, args.n, args.level1_rate)
    lazy = await run_config("agentm3d-lazy", samples, args.n, args.level1_rate)
    print(describe("mmd-agent-bon", uniform, len(samples)))
    print(describe("agentm3d", agentm3d, len(samples)))
    print(describe("agentm3d-lazy", lazy, len(samples)))
    ratio = mean(agentm3d.calls) / mean(uniform.calls)
    print(f"ratio agentm3d / mmd-agent-bon = {ratio:.3f} (target <= 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")
    print(f"ratio agentm3d-lazy / mmd-agent-bon = {mean(lazy.calls) / mean(uniform.calls):.3f}")
    print("sensitivity to the planner's level-1 rate (agentm3d calls/sample, ratio):")
    for rate in (0.0, 0.2, 0.25, 0.5, 1.0):
        other = await run_config("agentm3d", samples, args.n, rate)
        print(f"  level-1 rate {rate:.2f}: {mean(other.calls):6.2f}  ratio {mean(other.calls) / mean(uniform.calls):.3f}")
    rates = [(f"the paper's escalation on {name} ({100 * rate:.1f}%, paper line 228)", rate)
             for name, rate in PAPER_ESCALATION.items()]
    if measured is not None:
        rates.append((f"the escalation measured by the run {args.run} ({100 * measured:.1f}%)", measured))
    for label, rate in rates:
        run = await run_config("agentm3d", samples, args.n, rate)
        print(f"ratio agentm3d / mmd-agent-bon at {label}: {mean(run.calls) / mean(uniform.calls):.3f} "
              f"({mean(run.calls):.2f} calls/sample, escalated {run.escalated}/{len(samples)})")

if __name__ == "__main__":
    asyncio.run(main())
