"""One run session for every front-end: backends, retrieval and the evidence store opened once, samples run, all closed.

Every way of running a configuration (``m3d check``, ``m3d debate``, ``m3d evaluate`` in one
process or on Ray workers, ``m3d reproduce``, the web page, the notebooks) runs its samples through
:func:`run_sample`, which has no branch on a strategy's or a configuration's name.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debates.config_loader import load_config
from debates.strategy import STRATEGIES, RunContext, StrategyConfig
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import Verdict

if TYPE_CHECKING:
    from m3d_agents.backends.factory import BackendPool


def sample_seed(run_seed: int, sample_id: str) -> int:
    """A sample's seed from the run's seed and the sample's id, so a resumed or distributed run gives each sample the seed it would have had."""
    digest = hashlib.sha256(f"{run_seed}:{sample_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF



async def run_sample(
    config: str | Path | StrategyConfig,
    sample: Sample,
    pool: BackendPool,
    *,
    backend: str | None = None,
    limits: InputLimits | None = None,
    seed: int = 0,
    **options: Any,
) -> Verdict:
    """Run ``config`` (a built-in name, a YAML path, or a loaded configuration) on ``sample``.

    ``backend`` overrides the backend of every seat; ``options`` are further :class:`RunContext`
    fields (evidence, an evidence source, human seats, streaming callbacks ...).
    """
    loaded = config if isinstance(config, StrategyConfig) else load_config(config)
    ctx = RunContext(pool=pool, backend=backend, limits=limits, seed=seed, **options)
    try:
        verdict = await STRATEGIES.get(loaded.strategy)(loaded).run(sample, ctx)
    finally:
        report = ctx.evidence_log.report(sample.id) if ctx.evidence_log is not None else None
    return verdict.model_copy(update={"evidence_report": report}) if report is not None else verdict
