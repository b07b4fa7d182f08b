"""What the tree search costs per post: ``t2agent`` and ``t2agent-lean`` against MMD-Agent, on the same 50
MediaEval 2016 dev posts, at GPT-4o prices, and how the search moves between subtasks.

What it prints. Per post (first seed): calls, tokens and dollars of each configuration, the cost
of ``t2agent-lean`` by role, and the cost of ``t2agent`` and of ``mmd-agent-wikipedia`` by phase
(``t2agent``: priors, ReAct steps, model-backed tool calls, trajectory scores S_T, confidence scores
S_C and the fusion, which calls no model; MMD-Agent: its three steps), each with its calls, prompt
and answer tokens, the mean prompt of one call and the image's part of it, the mean answer and the
share of the cost. For ``t2agent``, over every seed: the share of posts where some subtask was
selected in more than one iteration (``subtask revisit rate: X``) and the mean iterations per post
(``mean iterations: X``, beside the 2.28 of the paper's Table 7). Then the cost ratios of
``t2agent`` and ``t2agent-lean`` against each baseline, each under its own name (``t2agent /
mmd-agent cost ratio``, ``t2agent / mmd-agent-wikipedia cost ratio``), as the mean over the seeds
with the lowest and highest seed; the ratio ``t2agent`` would have at the paper's 2.28 iterations
(its priors plus 2.28 times its mean cost per iteration); and a labelled what-if, the only figure
drawn from another distribution: ``t2agent`` with a model sure of most answers (S_C uniform on
7..10), its iterations and its ratio. There is no target: the paper's method costs what it costs,
and the paper's own ratio (Table 4: 4.75 with GPT-4o, 1637.1 / 344.4 USD) comes from another model,
another data set and far longer prompts (its per-post figures are some 30 times ours), so it is
printed for orientation only.

The baselines. ``mmd-agent`` is whatever configuration carries that name in this build (AgentM3D's
MMD-Agent, Wikipedia gathered up front), and ``mmd-agent-wikipedia`` the T2Agent paper's MMD-Agent,
the same chain whose text step looks claims up on Wikipedia in a short ReAct trajectory; the first
line of each one's description is printed, so a reader knows which MMD-Agent a ratio divides by.
Searches answer as many items as the configuration keeps (``wikipedia_results``, ``query_results``).

How ``t2agent`` is billed. Its n = 2 children of an expansion are two answers to one identical
prompt; GPT-4o's API (and vLLM) return both as choices of one request (``n``) and bill the prompt,
image included, once, and the search asks that way where the backend can. The scripted client
below does what the API does; the row "t2agent, a call per child" is the same search on a backend
that cannot, with every choice a call of its own. Both draw the same answers (choice i is seeded
as call i would be).

The model is scripted (the test double of tests/support/scripted.py, with vision on), so the
figures count calls and tokens, not quality. Its answer distribution was fixed, and written down
here, before the first run of this script; it is seeded by the post, the call and its seed, and
was not changed after seeing any figure:

- every post is, per modality (text, image, cross-modal), distorted with probability 0.25,
  independently; an answer (a cascade agent's Finish, a tree step's Finish) agrees with that
  truth with probability 0.8;
- tree search: the priors are 0.7 for a distorted modality and 0.3 otherwise, plus uniform noise
  in [-0.2, 0.2]; a step that may act calls a tool with probability 0.6 at step 1, 0.4 at step 2
  and 0.2 later (a uniformly chosen verb of the menu, on three words of the post), otherwise it
  finishes; the trajectory score is uniform on 4..9 and the confidence score uniform on 3..10;
- MMD-Agent's text step with its Wikipedia lookup looks up three words of the post once, then
  answers; a chained MMD-Agent's steps answer as the cascade's agents do;
- the cascade's planner asks for best-of-N on 30% of posts; the reward judge's score is uniform
  on [0, 1] and a critic's uniform on 1..10 (as in benchmarks/calls_per_sample.py);
- answers are as long as the prompts ask for (a sentence is about 16 words): a cascade agent
  five sentences, a tree step one thought, a trajectory score three sentences where its prompt
  asks for at most four and six where it asks for a detailed analysis (the second figure was set
  when the detailed prompt was written, before this script ran with it), a confidence score two, a
  critic three, the priors and the planner one; vision tools two sentences or a small JSON
  object; web and Wikipedia searches return three snippets of about 50 words;
- every image attached to a call costs 765 prompt tokens (GPT-4o's count for a 1024-pixel image
  at high detail); text costs one token per four characters.

The scripted answers are seeded by the whole prompt and by the run's seed (0, 1000, ...), so each
seed is another draw of the same distribution; ``--repeats`` sets how many (default 5).

    python benchmarks/search_cost.py [--samples 50] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any, Mapping, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autogen_core.models import CreateResult, LLMMessage, RequestUsage  # noqa: E402

from debates.eval.score.prices import HOSTED  # noqa: E402
from debates.strategies.t2agent.config import T2AgentConfig  # noqa: E402
from debates.strategy import StrategyConfig  # noqa: E402
from retrieval.config import RetrievalConfig  # noqa: E402
from m3d_agents.backends.choices import Choices  # noqa: E402
from debates.config_loader import load_config  # noqa: E402
from debates.session import run_sample  # noqa: E402
from m3d_agents.backends.factory import BackendPool  # noqa: E402
from m3d_agents.datasets import load_dataset  # noqa: E402
from debates.strategies.t2agent.diagnostics import T2AgentDiagnostics  # noqa: E402
from m3d_agents.evidence import Evidence  # noqa: E402
from m3d_agents.sample import Sample  # noqa: E402
from m3d_agents.verdict import RoleUsage  # noqa: E402
from tests.support.scripted import ScriptedClient, scripted_backend, text_of  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "mediaeval2016-dev"
IMAGE_TOKENS = 765
PRICE = HOSTED["gpt-4o"]
TREES = ("t2agent", "t2agent-lean")
BASELINES = ("mmd-agent", "mmd-agent-wikipedia")
PAPER_ITERATIONS = 2.28
PAPER_TABLE4 = (1637.1, 344.4)

SENTENCES = [
    "The post names a place, a time and an event that can each be checked against public records.",
    "Nothing in the wording is self-contradictory, although the tone is more emphatic than a news report.",
    "The picture shows a street scene whose light and shadows look consistent with a single photograph.",
    "The evidence gathered so far neither confirms nor refutes the central claim in a decisive way.",
    "A careful reader would want one more independent source before accepting the claim as stated.",
    "The caption and the image agree on the setting, but the image alone cannot date the event.",
    "Earlier reporting on the same event describes similar scenes without mentioning this detail.",
    "The reasoning follows from the observations, and no step relies on an unsupported guess.",
]
MODALITY_OF_TITLE = {"text veracity": "text", "image veracity": "image", "cross-modal consistency": "cross_modal"}
MODALITY_OF_FAKE = {"TEXT REFUTE": "text", "IMAGE REFUTE": "image", "MISMATCH": "cross_modal"}
CASCADE = {"its TEXT is true": ("text", "TEXT REFUTE", "TEXT SUPPORT"),
           "its IMAGE is genuine": ("image", "IMAGE REFUTE", "IMAGE SUPPORT"),
           "image and its text belong together": ("cross_modal", "MISMATCH", "MATCH")}
CHAIN_STEP = re.compile(r"^Step \d+ of \d+: whether (its TEXT is true|its IMAGE is genuine|the image and its text belong "
                        r"together)", re.MULTILINE)
CHAIN = {"its TEXT is true": CASCADE["its TEXT is true"], "its IMAGE is genuine": CASCADE["its IMAGE is genuine"],
         "the image and its text belong together": CASCADE["image and its text belong together"]}


def filler(count: int, key: str) -> str:
    rng = random.Random(f"filler|{key}")
    return " ".join(rng.choice(SENTENCES) for _ in range(count))


def post_of(prompt: str) -> str:
    found = re.search(r'"""\n(.*?)\n"""', prompt, re.DOTALL)
    return found.group(1) if found else ""


def distorted(modality: str, post: str) -> bool:
    return random.Random(f"truth|{modality}|{post}").random() < 0.25


def answer_for(modality: str, post: str, key: str, fake: str, real: str) -> str:
    agrees = random.Random(f"agree|{key}").random() < 0.8
    return fake if distorted(modality, post) == agrees else real


@dataclass
class SeededScript:
    """Answers every kind of call of the three systems from the distribution in the module docstring."""

    level1_rate: float = 0.3
    sure_from: int = 3
    """The lowest confidence score S_C drawn (uniform up to 10); 3 is the distribution fixed before the first run,
    and a higher value only feeds the labelled what-if line."""
    kinds: Counter[str] = field(default_factory=Counter)
    last: str = ""
    """The kind of the call answered last (the client reads it to count that call's image tokens by kind)."""

    def __call__(self, messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        prompt = text_of(messages)
        system, last = text_of(messages[:1]), text_of(messages[-1:])
        seed = int(kwargs.get("seed", 0) or 0)
        post = post_of(prompt)
        kind, text = self.answer(prompt, system, last, post, seed)
        self.kinds[kind] += 1
        self.last = kind
        return text

    def answer(self, prompt: str, system: str, last: str, post: str, seed: int) -> tuple[str, str]:
        if "The likelihoods are" in prompt:
            titles = [t for t in re.findall(r"^\d+\. (.+)$", prompt, re.MULTILINE) if t in MODALITY_OF_TITLE]
            rng = random.Random(f"prior|{post}")
            values = [min(1.0, max(0.0, (0.7 if distorted(MODALITY_OF_TITLE[t], post) else 0.3) + rng.uniform(-0.2, 0.2)))
                      for t in titles]
            return "prior", f"{filler(1, post)}\nThe likelihoods are [{', '.join(f'{v:.2f}' for v in values)}]"
        if "correctness score is" in prompt:
            sentences = 6 if "in detail" in prompt else 3
            return "trajectory_score", (f"{filler(sentences, prompt)}\nThe correctness score is"
                                        f" {random.Random(f'st|{prompt}').randint(4, 9)}")
        if "reliability score is" in prompt:
            return "confidence_score", f"{filler(2, prompt)}\nThe reliability score is {random.Random(f'sc|{prompt}').randint(self.sure_from, 10)}"
        if "Actions you may take" in prompt and "works one step at a time" in system:
            return "step", self.step(prompt, post, seed)
        if "strict grader" in last:
            return "reward", f"SCORE: {random.Random(f'reward|{prompt}').random():.3f}"
        if "checking effort" in system:
            hard = random.Random(f"plan|{post}").random() < self.level1_rate
            return "planner", f"{filler(1, post)} {'[BON level-1]' if hard else '[BON level-0]'}"
        if "You are a critic" in system:
            return "critique", f"{filler(3, prompt)}\nThe score is {random.Random(f'critique|{prompt}').randint(1, 10)}"
        if "internal logic, not for its truth" in prompt:
            return "logic", '{"consistent": true, "issues": [], "rationale": "The claim does not contradict itself."}'
        if "List the named entities the attached image shows" in prompt:
            return "entities", ('{"entities": [{"name": "city hall", "type": "landmark", "evidence": "the facade in the'
                                ' background"}, {"name": "police", "type": "organisation", "evidence": "uniforms"}]}')
        if "Look at the attached image alone" in prompt:
            plausible = not distorted("image", post)
            return "physics", f'{{"plausible": {str(plausible).lower()}, "problems": [], "rationale": "{filler(1, prompt)}"}}'
        if "Answer the question about the attached image" in prompt or "Describe the attached image" in prompt:
            return "vision_tool", filler(2, prompt)
        chained = CHAIN_STEP.search(last) if "one step per request" in system else None
        if chained is not None:
            modality, fake, real = CHAIN[chained.group(1)]
            action = answer_for(modality, post, f"{modality}|{post}|{seed}", fake, real)
            if "Work on this in steps" in last and "Write step 1 now" in last:
                words = post.split()[:3]
                return f"chain_{modality}", f"Thought 1: {filler(1, post)}\nAction 1: Wikipedia[{' '.join(words)}]"
            return f"chain_{modality}", f"{filler(5, f'{modality}|{post}|{seed}')}\nFinish[{action}]\nCONFIDENCE: 0.7"
        for marker, (modality, fake, real) in CASCADE.items():
            if marker in system:
                action = answer_for(modality, post, f"{modality}|{post}|{seed}", fake, real)
                if "Work on this in steps" in prompt and "Write step 1 now" in prompt:
                    words = post.split()[:3]
                    return "react_step", f"Thought 1: {filler(1, post)}\nAction 1: Wikipedia[{' '.join(words)}]"
                return "cascade", f"{filler(5, f'{modality}|{post}|{seed}')}\nFinish[{action}]\nCONFIDENCE: 0.7"
        raise AssertionError(f"unexpected prompt: {system[:80]} / {last[:80]}")

    def step(self, prompt: str, post: str, seed: int) -> str:
        menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
        assert menu is not None
        fake, real = menu.group(1), menu.group(2)
        modality = MODALITY_OF_FAKE[fake]
        last_step = "This is your last step" in prompt
        number = re.search(r"Write step (\d+) now|Thought (\d+): <your conclusion", prompt)
        k = int(next(g for g in number.groups() if g)) if number else 1
        rng = random.Random(f"step|{modality}|{post}|{k}|{seed}")
        verbs = [v for v in re.findall(r"^- (\w+)\[", prompt, re.MULTILINE) if v != "Finish"]
        thought = filler(1, f"thought|{modality}|{post}|{k}|{seed}")
        if verbs and not last_step and rng.random() < {1: 0.6, 2: 0.4}.get(k, 0.2):
            words = post.split()
            argument = " ".join(rng.sample(words, min(3, len(words)))) or "the post"
            return f"Thought {k}: {thought}\nAction {k}: {rng.choice(verbs)}[{argument}]"
        action = answer_for(modality, post, f"{modality}|{post}|{k}|{seed}", fake, real)
        return f"Thought {k}: {thought}\nAction {k}: Finish[{action}]"


def images_in(messages: Sequence[LLMMessage]) -> int:
    return sum(1 for m in messages for part in (getattr(m, "content", "") if isinstance(getattr(m, "content", ""), list) else [])
               if not isinstance(part, str))


@dataclass
class PricedScriptedClient(ScriptedClient):
    """The scripted client, with GPT-4o's token count for every image a request attaches.

    Like GPT-4o's API (``n``), it answers several choices to one request when asked, with the
    prompt, images included, counted once; ``samples_choices=False`` stands for a backend that
    cannot, where each choice is a call of its own."""

    image_tokens: Counter[str] = field(default_factory=Counter)
    """Image tokens billed, by the kind of call (the script's ``last``: the scripted client answers without yielding)."""

    def _billed(self, messages: Sequence[LLMMessage]) -> int:
        tokens = IMAGE_TOKENS * images_in(messages)
        if isinstance(self.script, SeededScript):
            self.image_tokens[self.script.last] += tokens
        return tokens

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        result = await super().create(messages, **kwargs)
        usage = result.usage
        result.usage = RequestUsage(prompt_tokens=usage.prompt_tokens + self._billed(messages),
                                    completion_tokens=usage.completion_tokens)
        return result

    async def create_choices(self, messages: Sequence[LLMMessage], n: int, **kwargs: Any) -> Choices:
        choices = await super().create_choices(messages, n, **kwargs)
        usage = RequestUsage(prompt_tokens=choices.usage.prompt_tokens + self._billed(messages),
                             completion_tokens=choices.usage.completion_tokens)
        return Choices(choices.results, usage, choices.cached)


class SnippetSearcher:
    """Web and Wikipedia search stand-ins: snippets of about 50 words per query, seeded by the query, as many as the
    configuration keeps (the run path's answerers keep ``wikipedia_results`` articles and ``query_results`` hits)."""

    def __init__(self, kind: str, keep: int = 3) -> None:
        self.kind = kind
        self.keep = keep

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return [
            Evidence(kind="wikipedia" if self.kind == "wikipedia" else "answer", url=f"https://example.org/{self.kind}/{i}",
                     text=f"{query}: {filler(3, f'{self.kind}|{query}|{i}')}")
            for i in range(self.keep)
        ]


def searchers_for(config: StrategyConfig) -> dict[str, SnippetSearcher]:
    settings = config.retrieval or RetrievalConfig()
    return {"web": SnippetSearcher("web", settings.query_results),
            "wikipedia": SnippetSearcher("wikipedia", settings.wikipedia_results)}


def load_posts(count: int) -> list[Sample]:
    """One post per image, fake and real alternating, the first ``count`` of MediaEval 2016 dev."""
    samples = load_dataset(f"mediaeval:{DATA}", {"one_post_per_image": "true"}).samples
    fakes = [s for s in samples if s.gold_label == "fake"]
    reals = [s for s in samples if s.gold_label == "real"]
    return [s for pair in zip(fakes, reals) for s in pair][:count]


@dataclass
class Run:
    calls: list[int] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    revisited: list[bool] = field(default_factory=list)
    abstained: int = 0
    by_role: dict[str, RoleUsage] = field(default_factory=dict)
    image_tokens: Counter[str] = field(default_factory=Counter)
    """Image tokens billed, by the scripted kind of call."""
    tool_runs: Counter[str] = field(default_factory=Counter)
    """Tool calls by tool, searches included (a search calls no model, so it has no row of its own)."""

    def usd(self) -> list[float]:
        return [PRICE.cost(p, c) for p, c in zip(self.prompt_tokens, self.completion_tokens)]

    def cost(self) -> float:
        return mean(self.usd())

    def cost_at(self, iterations: float) -> float:
        """The mean cost of a post had its search run ``iterations`` iterations: the priors, plus that many times the
        mean cost of one iteration (everything but the priors, per iteration run)."""
        prior = self.by_role.get("prior", RoleUsage())
        priors = PRICE.cost(prior.prompt_tokens, prior.completion_tokens) / len(self.calls)
        per_iteration = mean((usd - priors) / n for usd, n in zip(self.usd(), self.iterations) if n)
        return priors + iterations * per_iteration


async def run_config(name: str, samples: list[Sample], *, one_request: bool = True, seed_offset: int = 0,
                     script: SeededScript | None = None) -> Run:
    """``name`` on every post; ``one_request=False`` stands for a backend that answers one choice per request."""
    pool = BackendPool()
    client = PricedScriptedClient(script or SeededScript(), vision=True, samples_choices=one_request)
    pool.add(scripted_backend(client, name="bench"))
    run = Run(image_tokens=client.image_tokens)
    config = load_config(name)
    searchers = searchers_for(config)
    for i, sample in enumerate(samples):
        verdict = await run_sample(config, sample, pool, backend="bench", seed=seed_offset + i, searchers=searchers)
        accounting = verdict.accounting
        run.calls.append(accounting.model_calls)
        run.prompt_tokens.append(accounting.prompt_tokens)
        run.completion_tokens.append(accounting.completion_tokens)
        run.abstained += int(verdict.abstained)
        for role, usage in accounting.by_role.items():
            total = run.by_role.setdefault(role, RoleUsage())
            total.calls += usage.calls
            total.prompt_tokens += usage.prompt_tokens
            total.completion_tokens += usage.completion_tokens
        for tool, runs in accounting.tools.items():
            run.tool_runs[tool] += runs.calls
        if isinstance(verdict.diagnostics, T2AgentDiagnostics):
            run.iterations.append(verdict.diagnostics.iterations)
            run.revisited.append(bool(verdict.diagnostics.search.revisited))
    return run


def describe(name: str, run: Run) -> str:
    return (f"{name:28s} {mean(run.calls):6.2f} calls  {mean(run.prompt_tokens):8.0f} prompt + {mean(run.completion_tokens):6.0f}"
            f" completion tokens  ${run.cost():.4f} per post  (abstained {run.abstained})")


def roles(name: str, run: Run, posts: int) -> str:
    """Per post and role, most expensive first: calls, prompt + completion tokens, and the role's share of the cost."""
    total = sum(run.usd())
    rows = sorted(run.by_role.items(), key=lambda item: -PRICE.cost(item[1].prompt_tokens, item[1].completion_tokens))
    lines = [f"{name} per post by role (calls; prompt + completion tokens; share of cost):"]
    for role, usage in rows:
        share = PRICE.cost(usage.prompt_tokens, usage.completion_tokens) / total if total else 0.0
        lines.append(f"  {role:18s} {usage.calls / posts:5.2f} calls; {usage.prompt_tokens / posts:6.0f} + "
                     f"{usage.completion_tokens / posts:4.0f} tokens; {share:4.0%}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Phase:
    name: str
    roles: tuple[str, ...]
    """The ledger's roles of the phase's model calls."""
    kinds: tuple[str, ...]
    """The scripted kinds of the same calls (to read their image tokens)."""
    note: str = ""


TREE_PHASES = (
    Phase("priors", ("prior",), ("prior",)),
    Phase("ReAct steps", ("step",), ("step",)),
    Phase("tool calls", ("visual_question", "image_entities", "physics_check"), ("vision_tool", "entities", "physics"),
          "model-backed tools: VQA, Entity, Detect; searches call no model"),
    Phase("trajectory scores", ("trajectory_score",), ("trajectory_score",)),
    Phase("confidence scores", ("confidence_score",), ("confidence_score",)),
    Phase("fusion", (), (), "eqs. 4-6 are arithmetic: no model call"),
)
CHAIN_PHASES = (
    Phase("text step", ("text",), ("chain_text",)),
    Phase("image step", ("image",), ("chain_image",)),
    Phase("cross-modal step", ("cross_modal",), ("chain_cross_modal",)),
)
"""MMD-Agent's phases: the chain's steps, the text step's Wikipedia lookups included."""


def phases(name: str, run: Run, posts: int, table: Sequence[Phase]) -> str:
    """Per post and phase: calls, prompt and answer tokens, the mean prompt and answer of one call (the image's part
    of the prompt, where it is known), and the phase's share of the cost."""
    total = sum(run.usd())
    lines = [f"{name} per post by phase (calls; prompt + answer tokens; mean prompt per call, of it image; mean answer"
             " per call; share of cost):"]
    for phase in table:
        usage = RoleUsage()
        for role in phase.roles:
            found = run.by_role.get(role, RoleUsage())
            usage.calls += found.calls
            usage.prompt_tokens += found.prompt_tokens
            usage.completion_tokens += found.completion_tokens
        share = PRICE.cost(usage.prompt_tokens, usage.completion_tokens) / total if total else 0.0
        calls = usage.calls or 1
        image = sum(run.image_tokens[k] for k in phase.kinds) if phase.kinds else None
        image_part = f"{image / calls:4.0f}" if image is not None and usage.calls else "   -"
        lines.append(f"  {phase.name:18s} {usage.calls / posts:5.2f} calls; {usage.prompt_tokens / posts:6.0f} + "
                     f"{usage.completion_tokens / posts:4.0f} tokens; prompt {usage.prompt_tokens / calls:5.0f} (image "
                     f"{image_part}); answer {usage.completion_tokens / calls:4.0f}; {share:4.0%}"
                     + (f"  ({phase.note})" if phase.note else ""))
    runs = ", ".join(f"{tool} {count / posts:.2f}" for tool, count in sorted(run.tool_runs.items()))
    lines.append(f"  tool runs per post: {runs or 'none'}")
    return "\n".join(lines)


def first_sentence(name: str) -> str:
    text = " ".join(load_config(name).description.split())
    return text.split(". ")[0].rstrip(".")


def spread(values: Sequence[float]) -> str:
    return f"mean {mean(values):.2f} over {len(values)} seeds (min {min(values):.2f}, max {max(values):.2f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5, help="seeds (0, 1000, ...) the ratios are averaged over")
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"needs the shared data set at {DATA}")
    if args.repeats < 1:
        raise SystemExit("--repeats: at least 1")
    samples = load_posts(args.samples)
    posts = len(samples)
    print(f"{posts} MediaEval 2016 dev posts; scripted vision model; GPT-4o prices "
          f"(${PRICE.input_per_mtok}/M input, ${PRICE.output_per_mtok}/M output)")
    for name in BASELINES:
        print(f"baseline {name}: {first_sentence(name)}")
    seeds: list[dict[str, Run]] = []
    for r in range(args.repeats):
        seeds.append({name: await run_config(name, samples, seed_offset=1000 * r) for name in (*TREES, *BASELINES)})
    first = seeds[0]
    separate = await run_config("t2agent", samples, one_request=False)
    print("per post, seed 0:")
    for name, run in first.items():
        print(describe(name, run))
    print(describe("t2agent, a call per child", separate))
    print(roles("t2agent-lean", first["t2agent-lean"], posts))
    print(phases("t2agent", first["t2agent"], posts, TREE_PHASES))
    print(phases("mmd-agent-wikipedia", first["mmd-agent-wikipedia"], posts, CHAIN_PHASES))

    tree = load_config("t2agent")
    assert isinstance(tree, T2AgentConfig)
    runs = {name: [seed[name] for seed in seeds] for name in TREES}
    print(f"t2agent search over {args.repeats} seeds x {posts} posts (K = {tree.k}, C = {tree.search.exploration:g},"
          f" uct {tree.search.uct}; most calls on a post {max(max(r.calls) for r in runs['t2agent'])},"
          f" bound 1 + K(2nd + 1) = {tree.bound()} plus model-backed tools):")
    revisits = [v for run in runs["t2agent"] for v in run.revisited]
    iterations = [v for run in runs["t2agent"] for v in run.iterations]
    print(f"subtask revisit rate: {mean(revisits):.2f}")
    print(f"mean iterations: {mean(iterations):.2f} (paper, Table 7: {PAPER_ITERATIONS})")
    lean_revisits = [v for run in runs["t2agent-lean"] for v in run.revisited]
    lean_iterations = [v for run in runs["t2agent-lean"] for v in run.iterations]
    print(f"t2agent-lean: revisit rate {mean(lean_revisits):.2f}, mean iterations {mean(lean_iterations):.2f}")
    print(f"paper, Table 4 with GPT-4o: T2Agent / MMD-Agent {PAPER_TABLE4[0] / PAPER_TABLE4[1]:.2f}"
          f" ({PAPER_TABLE4[0]} / {PAPER_TABLE4[1]} USD; another model, data set and prompt volume, for orientation)")
    for name in TREES:
        for base in BASELINES:
            ratios = [seed[name].cost() / seed[base].cost() for seed in seeds]
            print(f"{name} / {base} cost ratio: {spread(ratios)}")
    print(f"seed 0 against each baseline: t2agent {ratio(first['t2agent'], first['mmd-agent-wikipedia'])} against"
          f" mmd-agent-wikipedia; a call per child {ratio(separate, first['mmd-agent-wikipedia'])}")
    at_paper = [seed["t2agent"].cost_at(PAPER_ITERATIONS) / seed["mmd-agent-wikipedia"].cost() for seed in seeds]
    print(f"t2agent at the paper's {PAPER_ITERATIONS} iterations (its priors plus {PAPER_ITERATIONS} times its mean cost"
          f" per iteration) / mmd-agent-wikipedia cost ratio: {spread(at_paper)}")
    sure = [await run_config("t2agent", samples, seed_offset=1000 * r, script=SeededScript(sure_from=7))
            for r in range(args.repeats)]
    print(f"what if the model were sure of most answers (S_C uniform on 7..10, 3 in 4 at or above the threshold"
          f" {tree.search.threshold:g}; the benchmark's distribution is 3..10, 3 in 8): mean iterations"
          f" {mean(v for run in sure for v in run.iterations):.2f}; t2agent / mmd-agent-wikipedia cost ratio:"
          f" {spread([run.cost() / seed['mmd-agent-wikipedia'].cost() for run, seed in zip(sure, seeds)])}")


def ratio(run: Run, base: Run) -> str:
    calls = mean(run.calls) / mean(base.calls)
    tokens = (mean(run.prompt_tokens) + mean(run.completion_tokens)) / (mean(base.prompt_tokens) + mean(base.completion_tokens))
    return f"cost {run.cost() / base.cost():.2f} (calls {calls:.2f}, tokens {tokens:.2f})"


if __name__ == "__main__":
    asyncio.run(main())
