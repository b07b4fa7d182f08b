"""The ``tools:`` block every configuration may carry: per tool, a backend of its own, weights, and what it stands in for.

::

    tools:
      physics_check: {backend: llava}            # its model calls go to the backend named llava
      learned_detector: {model: ~/ckpt/trufor}   # a TorchScript file or a Hugging Face checkpoint folder
      image_entities:
        paper: {runs: "Baidu's entity recognition API", paper_line: "207"}

The user's config file (``m3d.yaml``) may hold a ``tools:`` block of backends and weights too, for
every configuration run with it; where both set a field, the configuration's wins. A tool left out
runs as before: on the backend of the agent that calls it. ``--backend`` changes the agents'
backend, never a tool's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from pydantic import Field

from debates.fidelity import PaperTool
from m3d_agents.backends.config import ToolBinding
from m3d_agents.errors import InputError

if TYPE_CHECKING:
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.tools.cards import ToolSetup


class ToolSettings(ToolBinding):
    """One tool's settings in a configuration: where it runs (as in the config file) and what the paper runs instead."""

    paper: PaperTool | None = Field(
        None, description="on a configuration named after a paper: what the paper runs where this tool runs (it is a "
        "stand-in), so a run can list it and say when it runs on the agent's own model"
    )


def tool_problem(name: str, binding: ToolBinding) -> str | None:
    """Why ``binding`` cannot apply to the tool ``name``: an unknown tool, or a setting the tool has no use for."""
    from m3d_agents.tools.catalogue import default_registry

    registry = default_registry()
    if name not in registry.names():
        return f"unknown tool {name!r}; known: {', '.join(registry.names())}"
    card = registry.card(name)
    if binding.backend is not None and not card.calls_model:
        return f"{name} calls no model, so it cannot have a backend of its own"
    if (binding.model is not None or binding.positive_label is not None) and not card.loads_checkpoint:
        return f"{name} loads no weights, so model and positive_label do not apply to it"
    return None


def check_tools(tools: Mapping[str, ToolBinding], field: str = "tools") -> None:
    """Raise an :class:`InputError` naming the first tool whose settings cannot apply."""
    for name, binding in tools.items():
        problem = tool_problem(name, binding)
        if problem:
            raise InputError(f"{field}.{name}", problem)


def merged_tools(own: Mapping[str, ToolSettings], from_file: Mapping[str, ToolBinding]) -> dict[str, ToolSettings]:
    """The configuration's tool settings over the config file's: the configuration wins where both set a field."""
    merged: dict[str, ToolSettings] = {}
    for name in dict.fromkeys([*own, *from_file]):
        mine = own.get(name) or ToolSettings()
        merged[name] = mine.merged_over(from_file.get(name))
    return merged


def resolve_tools(pool: BackendPool, own: Mapping[str, ToolSettings]) -> ToolSetup:
    """The run's per-tool backends (built on first use) and bindings, from the configuration and the pool's config file."""
    from m3d_agents.tools.cards import ToolSetup

    settings = merged_tools(own, pool.settings.tools)
    check_tools(pool.settings.tools, "config file tools")
    known = pool.names()
    for name, binding in settings.items():
        if binding.backend is not None and binding.backend not in known:
            raise InputError(f"tools.{name}.backend", f"unknown backend {binding.backend!r}; known: {', '.join(known)}")
    backends = {name: pool.get(binding.backend) for name, binding in settings.items() if binding.backend is not None}
    return ToolSetup(backends=backends, bindings=dict(settings))
