"""Run one named configuration on one sample: the single entry point for the CLI, batch runs and notebooks."""

from __future__ import annotations

from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import Verdict

BUILTIN = ("check",)


def available_configs() -> list[str]:
    return list(BUILTIN)


async def run_sample(
    config: str,
    sample: Sample,
    pool: BackendPool,
    *,
    backend: str | None = None,
    limits: InputLimits | None = None,
    seed: int = 0,
) -> Verdict:
    """Run ``config`` on ``sample``; ``backend`` overrides the backend of every seat when given."""
    if config == "check":
        from debates.check import check_sample

        return await check_sample(sample, pool, backend or pool.settings.backend, limits)
    raise InputError("config", f"unknown configuration {config!r}; available: {', '.join(available_configs())}")
