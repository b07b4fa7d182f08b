"""How the web page runs a post: on a pool of its own, with the run's evidence sources, both closed after.

The live page and the study page run posts the way ``m3d check`` does, through
:func:`debates.strategy.run_sample`, and, like every other run path, gather evidence through
:func:`retrieval.runpath.open_retrieval`: a configuration with a ``retrieval:`` block gets its
reverse image search, pages and summaries, so the page does not quietly run the paper's "without
external information" ablation. A post that the server's ``run_options`` knows (a recorded MR2
claim under ``--replay-mr2``) keeps the evidence recorded with it instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from debates.strategy import StrategyConfig
from debates.config_loader import load_config
from debates.session import run_sample
from debates.ui.web.settings import WebSettings
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict


async def run_post(
    settings: WebSettings, config: str | Path | StrategyConfig, sample: Sample, backend: str | None, **options: Any
) -> Verdict:
    """The verdict of ``config`` on ``sample``; ``options`` are further :class:`~debates.strategy.RunContext` fields."""
    from retrieval.runpath import open_retrieval

    if isinstance(config, (str, Path)):
        config = load_config(config)
    pool = settings.pool_factory()
    sources = None
    try:
        given = dict(settings.run_options(sample)) if settings.run_options else {}
        if not given:
            sources = open_retrieval(config, pool, mode=settings.retrieval, store_path=settings.evidence_store, backend=backend)
            given = sources.context_options()
        return await run_sample(config, sample, pool, backend=backend, limits=settings.limits, **{**given, **options})
    finally:
        if sources is not None:
            await sources.close()
        await pool.close()
