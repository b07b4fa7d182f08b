"""A strategy for tests of distributed runs: it kills its own worker process on a marked post.

Ray workers import this module (``worker_imports``) so the strategy is registered there; it makes
no model call, so a test measures the runner and nothing else.
"""

from __future__ import annotations

import asyncio
import os
from typing import ClassVar, Literal

from debates.strategy import RunContext, StrategyConfig, strategy
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict

MARKER = "KILL-WORKER"


class CrashConfig(StrategyConfig):
    strategy: Literal["crash_on_marker"] = "crash_on_marker"
    delay_s: float = 0.05


@strategy("crash_on_marker")
class CrashOnMarker:
    config_model: ClassVar[type[StrategyConfig]] = CrashConfig

    def __init__(self, config: CrashConfig) -> None:
        self.config = config

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        await asyncio.sleep(self.config.delay_s)
        if MARKER in sample.text:
            os._exit(1)
        return ctx.verdict(sample, self.config, backend="none", label=sample.gold_label or "real")
