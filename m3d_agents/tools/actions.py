"""Running a step's action: the check's own tools only, each result computed once per sample.

Why a cache: the search expands several children at once and revisits subtasks, and two
children often pick the same action (the same Wikipedia page, the same detector run). A tool's
result depends only on the sample and the argument, so the second use is served from the first
(also while the first is still running). The cache lives in one runner built per sample, so
nothing carries over to the next post.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from m3d_agents.tools.react import FINISH, ActionSpec, Step
from m3d_agents.errors import BackendError
from m3d_agents.tools.cards import ToolContext, ToolRegistry


@dataclass(frozen=True)
class Observation:
    text: str
    tool: str | None = None
    cached: bool = False
    error: str | None = None


@dataclass
class ActionRunner:
    """Executes allowed actions for one sample through the tool registry, with a per-sample cache."""

    registry: ToolRegistry
    context: ToolContext
    cache_results: bool = True
    runs: Counter[str] = field(default_factory=Counter)
    """Tool executions by verb (cache hits excluded)."""
    cache_hits: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    _results: dict[tuple[str, str], asyncio.Future[str]] = field(default_factory=dict)

    async def run(self, step: Step, specs: Mapping[str, ActionSpec]) -> Observation:
        """The observation of a step's action; an action outside ``specs`` is never executed."""
        if not step.allowed or step.verb not in specs:
            self.refused[step.verb] += 1
            allowed = ", ".join([*(s.form for s in specs.values()), f"{FINISH}[answer]"])
            return Observation(f"{step.verb}[...] is not an action of this check and was not run. Allowed: {allowed}.")
        spec = specs[step.verb]
        argument = step.argument if spec.card.argument else ""
        key = (spec.card.name, " ".join(argument.split()).casefold())
        shared = self._results.get(key) if self.cache_results else None
        if shared is not None:
            self.cache_hits[step.verb] += 1
            return await self._observe(spec, shared, cached=True)
        self.runs[step.verb] += 1
        future: asyncio.Future[str] = asyncio.ensure_future(self._execute(spec, argument))
        if self.cache_results:
            self._results[key] = future
        return await self._observe(spec, future, cached=False)

    async def _observe(self, spec: ActionSpec, result: asyncio.Future[str], cached: bool) -> Observation:
        try:
            text = await asyncio.shield(result)
        except BackendError:
            raise
        except asyncio.CancelledError:
            if not result.done():
                result.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - a tool's failure is an observation, not a crash
            message = f"{spec.verb} failed: {exc}"
            if not cached:
                self.errors.append(message)
            return Observation(message, tool=spec.card.name, cached=cached, error=message)
        return Observation(text, tool=spec.card.name, cached=cached)

    async def _execute(self, spec: ActionSpec, argument: str) -> str:
        function = self.registry.bind(spec.card.name, self.context)
        kwargs = {spec.card.argument: argument} if spec.card.argument else {}
        return str(await function(**kwargs))
