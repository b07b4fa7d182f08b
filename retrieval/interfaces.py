"""The questions the debate layer asks of retrieval, as small protocols.

Debates depend only on these, so a live web provider, a local corpus and a recorded trace are
interchangeable, and tests can pass a plain object that answers from a dictionary. A ledger, when
given, receives the model calls that retrieval makes (summaries, reliability judgements).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from retrieval.fetch import FetchedImage


@runtime_checkable
class EvidenceSource(Protocol):
    """Gathers the evidence for a sample before the debate starts (reverse image search, pages, summaries)."""

    async def gather(self, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]: ...


@runtime_checkable
class QueryAnswerer(Protocol):
    """Answers a disambiguation query that an agent asks during a debate."""

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]: ...


@runtime_checkable
class MatchedImages(Protocol):
    """Downloads the images a reverse image search matched, for a model to compare with the post's.

    Failures raise :class:`~m3d_agents.errors.BackendError` with the reason (a refused address, a
    size over the limit, nothing recorded in a replay)."""

    async def matched_image(self, url: str, sample: Sample) -> FetchedImage: ...
