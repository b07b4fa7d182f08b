"""Run one named configuration on one sample: the single entry point for the CLI, batch runs and notebooks."""

from __future__ import annotations

from typing import Any

from debates.config import builtin_config_names, load_config
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import Verdict


def available_configs() -> list[str]:
    return ["check", *builtin_config_names()]


async def run_sample(
    config: str,
    sample: Sample,
    pool: BackendPool,
    *,
    backend: str | None = None,
    limits: InputLimits | None = None,
    seed: int = 0,
    **debate_options: Any,
) -> Verdict:
    """Run ``config`` (a built-in name or a YAML path) on ``sample``.

    ``backend`` overrides the backend of every seat; ``debate_options`` go to
    :func:`debates.strategies.debate.run_debate` (evidence, human seats, a streaming callback ...).
    """
    if config == "check":
        from debates.strategies.check import check_sample

        return await check_sample(sample, pool, backend or pool.default_backend, limits)
    from debates.strategies.debate import run_debate

    return await run_debate(load_config(config), sample, pool, backend=backend, limits=limits, seed=seed, **debate_options)
