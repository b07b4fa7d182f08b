"""Tool cards and the registry: what each tool is for, rendered into AutoGen tool descriptions.

A model picks tools by reading their descriptions, so the description is generated from one card
per tool (purpose, when to use it, inputs, outputs, cost, requirements) instead of being written
ad hoc next to each function. Tools are bound to one sample at a time through a
:class:`ToolContext`, which keeps samples from sharing state.

A tool that calls a model asks :meth:`ToolContext.backend_for` for its backend: the one the run
gave that tool (``tools: {NAME: {backend: ...}}``, :class:`ToolSetup`), else the calling agent's.
Every call made through the registry is counted in the sample's ledger, with whether the tool
answered "unavailable", so a run can say which tools never worked.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Protocol, Sequence

from pydantic import BaseModel, Field, field_validator

from m3d_agents.backends.config import ToolBinding
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample

if TYPE_CHECKING:
    from autogen_core.tools import FunctionTool
    from PIL import Image

    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.media.images import PreparedImage, PreparedSample

CostClass = Literal["cheap", "moderate", "expensive"]


class SearchService(Protocol):
    """Answers a search query with evidence (``retrieval``'s QueryAnswerer has this shape).

    Declared here so that the web tools need nothing from ``retrieval``: the run that binds the
    tools to a sample passes in whatever searchers it built (live, recorded or replayed).
    """

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]: ...


class ToolCard(BaseModel):
    name: str
    purpose: str
    when_to_use: str
    inputs: str
    outputs: str
    cost: CostClass
    needs_network: bool = False
    needs_gpu: bool = False
    needs_vision: bool = Field(False, description="needs a backend that can see images")
    calls_model: bool = Field(
        False, description="asks a language model; it runs on the calling agent's backend unless the run gives the "
        "tool a backend of its own (tools: {NAME: {backend: ...}})"
    )
    loads_checkpoint: bool = Field(False, description="runs local weights named by tools: {NAME: {model: PATH}}")
    category: Literal["forensics", "image_analysis", "ocr", "text", "time", "web", "video"] = "forensics"
    argument: str | None = Field(
        None,
        description="the invocation form: the parameter that an action's bracketed text fills (Google[query] fills "
        "'query'); None: the tool takes no text and works on the post's image",
    )

    @field_validator("name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]{1,63}", value):
            raise ValueError(f"{value!r} is not a tool name (lower-case letters, digits and _)")
        return value

    def description(self) -> str:
        needs = [label for flag, label in ((self.needs_network, "network"), (self.needs_gpu, "GPU"),
                                           (self.needs_vision, "a vision backend")) if flag]
        return (
            f"{self.purpose} When to use: {self.when_to_use} Inputs: {self.inputs} Outputs: {self.outputs} "
            f"Cost: {self.cost}. Needs: {', '.join(needs) if needs else 'nothing beyond the CPU'}."
        )


UNAVAILABLE = re.compile(r"(?:^|: |; )unavailable: ")
"""How a tool says it could not run (``physics_check: unavailable: backend local is text-only``)."""


def is_unavailable(answer: object) -> bool:
    """Whether a tool's answer says it could not run, read from its first line."""
    return isinstance(answer, str) and bool(UNAVAILABLE.search(answer.split("\n", 1)[0]))


def _new_ledger() -> UsageLedger:
    """A context's own ledger, imported when a tool runs: reading the cards (a configuration's tool names) must not
    import the model clients."""
    from m3d_agents.backends.metering import UsageLedger

    return UsageLedger()


@dataclass(frozen=True)
class ToolSetup:
    """What a run chose per tool: backends of their own and the bindings they came from (weights, labels)."""

    backends: Mapping[str, Backend] = field(default_factory=dict)
    """Tool name -> the backend its model calls go to; a tool absent here uses the calling agent's."""
    bindings: Mapping[str, ToolBinding] = field(default_factory=dict)
    """Tool name -> its merged settings from the configuration and the config file."""


@dataclass
class ToolContext:
    """The sample the tools work on, and where their model calls are billed."""

    prepared: PreparedSample
    ledger: UsageLedger = field(default_factory=_new_ledger)
    backend: Backend | None = None
    agent: str = "tools"
    evidence: list[Evidence] = field(default_factory=list)
    searchers: Mapping[str, SearchService] = field(default_factory=dict)
    """Search by kind (``web``, ``wikipedia``); a kind that is absent is not available in this run."""
    retrieved: list[Evidence] = field(default_factory=list)
    """Evidence the web tools found for this sample, so a verdict can cite it by id."""
    budgets: dict[str, int | None] = field(default_factory=dict)
    """Calls allowed per tool for this sample; a tool absent or None is unlimited."""
    calls: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    stats: Counter[str] = field(default_factory=Counter)
    """Counts a tool keeps about its work (results dropped by a filter, errors ...), named ``tool.what``."""
    artifacts_dir: Path | None = None
    """Where images a tool makes are saved as ``<sha256>.png``; None keeps them in memory only."""
    artifacts: list["Artifact"] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    """Options of tools for this run (``grid_max_side``, ``fact_probe_top_k`` ...)."""
    setup: ToolSetup = field(default_factory=ToolSetup)
    """Per-tool backends and weights chosen for this run."""

    def image(self, index: int) -> PreparedImage:
        count = len(self.prepared.images)
        if not 0 <= index < count:
            raise InputError("image_index", f"{index} is out of range; the post has {count} image(s)")
        return self.prepared.images[index]

    def spend(self, tool: str) -> bool:
        """Count one call of ``tool``; False (and a counted refusal) when its budget for the sample is used."""
        allowed = self.budgets.get(tool)
        if allowed is not None and self.calls[tool] >= allowed:
            self.refusals[tool] += 1
            return False
        self.calls[tool] += 1
        return True

    def require_backend(self) -> Backend:
        if self.backend is None:
            raise InputError("backend", "this tool calls a model, but no backend was given to the tools")
        return self.backend

    def backend_for(self, tool: str) -> Backend:
        """The backend of ``tool``'s model calls: its own when the run gave it one, else the calling agent's."""
        return self.setup.backends.get(tool) or self.require_backend()

    def binding(self, tool: str) -> ToolBinding:
        """``tool``'s settings for this run (empty when none were given)."""
        return self.setup.bindings.get(tool) or ToolBinding()


@dataclass(frozen=True)
class Artifact:
    """An image a tool made (a frame grid), saved by content hash and cited by its evidence id."""

    sha256: str
    image: "Image.Image"
    path: Path | None
    evidence_id: str
    caption: str


ToolFactory = Callable[[ToolContext], Callable[..., Any]]


def _counted(name: str, function: Callable[..., Any], context: ToolContext) -> Callable[..., Any]:
    """``function`` with every finished call recorded in ``context.ledger`` (a call that raised is not counted)."""

    @functools.wraps(function)
    async def call(*args: Any, **kwargs: Any) -> Any:
        answer = await function(*args, **kwargs)
        context.ledger.record_tool(name, is_unavailable(answer))
        return answer

    return call


@dataclass(frozen=True)
class RegisteredTool:
    card: ToolCard
    factory: ToolFactory


class ToolRegistry:
    """Every tool the agents may call, by name."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(self, card: ToolCard) -> Callable[[ToolFactory], ToolFactory]:
        def decorate(factory: ToolFactory) -> ToolFactory:
            if card.name in self._tools:
                raise ValueError(f"a tool named {card.name!r} is already registered")
            self._tools[card.name] = RegisteredTool(card, factory)
            return factory

        return decorate

    def names(self) -> list[str]:
        return list(self._tools)

    def cards(self, category: str | None = None) -> list[ToolCard]:
        return [t.card for t in self._tools.values() if category is None or t.card.category == category]

    def card(self, name: str) -> ToolCard:
        return self._entry(name).card

    def _entry(self, name: str) -> RegisteredTool:
        if name not in self._tools:
            raise InputError("tools", f"unknown tool {name!r}; known: {', '.join(self._tools)}")
        return self._tools[name]

    def bind(self, name: str, context: ToolContext) -> Callable[..., Any]:
        """One tool bound to ``context``, to be called directly (a ReAct action names it by verb);
        each call is counted in the context's ledger, with whether the tool answered "unavailable"."""
        return _counted(name, self._entry(name).factory(context), context)

    def function_tools(self, context: ToolContext, names: Sequence[str] | None = None) -> list[FunctionTool]:
        """AutoGen tools bound to ``context``; their descriptions come from the cards."""
        from autogen_core.tools import FunctionTool

        chosen = list(names) if names is not None else self.names()
        tools = []
        for name in chosen:
            entry = self._entry(name)
            tools.append(FunctionTool(_counted(name, entry.factory(context), context), description=entry.card.description(),
                                      name=name))
        return tools

    def catalogue(self) -> str:
        """All cards as text, for planners that choose tools before calling them."""
        return "\n".join(f"- {t.card.name}: {t.card.description()}" for t in self._tools.values())
