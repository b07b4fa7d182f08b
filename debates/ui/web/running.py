"""How the web page runs a post: in a run session of its own, on a pool of its own, both closed after.

The live page and the study page run posts the way ``m3d check`` does, through
:class:`debates.session.RunSession`, like every other run path: a configuration with a
``retrieval:`` block gets its reverse image search, pages and summaries, so the page does not
quietly run the paper's "without external information" ablation. A post of the MR2 trace that
``m3d serve --replay-mr2`` serves keeps the evidence recorded with it instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from debates.config_loader import load_config
from debates.session import RunSession
from debates.strategy import StrategyConfig, TurnCallback
from debates.ui.web.settings import WebSettings
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict


async def run_post(
    settings: WebSettings, config: str | Path | StrategyConfig, sample: Sample, backend: str | None, *,
    human_seats: Mapping[str, Callable[..., Any]] | None = None, on_turn: TurnCallback | None = None,
) -> Verdict:
    """The verdict of ``config`` on ``sample``, with a person in ``human_seats`` and each turn sent to ``on_turn``."""
    loaded = config if isinstance(config, StrategyConfig) else load_config(config)
    given = settings.sources_for(sample) if settings.sources_for is not None else None
    replayed = settings.replay_mr2 if given is None and sample.id in settings.replayed_ids else None
    session = RunSession(
        loaded, settings.pool_factory(), backend=backend, limits=settings.limits, sources=given, replay_mr2=replayed,
        retrieval=None if replayed else settings.retrieval, evidence_store=None if replayed else settings.evidence_store,
        close_pool=True, parsers=settings.parsers,
    )
    async with session:
        return await session.run(sample, human_seats=human_seats, on_turn=on_turn)
