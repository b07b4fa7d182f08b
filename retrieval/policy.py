"""The run's evidence policy: which evidence its strategies may use, and how far each source is trusted.

One run has one policy, built once from its configuration's ``retrieval:`` block (or the library
defaults when it has none): the domain ratings (the shipped list plus the run's
``reliability_list``), the rater (those lists, then a cached model judgement of unlisted domains
when ``judge_unknown_domains`` and the run gives it a backend) and the leakage filter (the run's
``leakage`` settings, ``enabled: false`` included, and its ``extra_factcheck_domains``).

Every path that evidence takes into a strategy shares these same objects: the pipeline that
gathers a sample's evidence up front, the answerers behind the agents' searches, and the run
context's evidence step (:meth:`debates.strategy.RunContext.gather_evidence`), which screens
whatever a source or searcher returns. So a source that knows neither rule (a plain search
answerer, a data set's searcher, a test double) is held to the run's settings too, and no
strategy re-filters with the library's defaults.
"""

from __future__ import annotations

from typing import Sequence

from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from retrieval.config import RetrievalConfig
from retrieval.interfaces import QueryAnswerer
from retrieval.leakage import Candidate, LeakageFilter
from retrieval.reliability import DomainRatings, ReliabilityRater
from retrieval.store import EvidenceStore, StoreMiss


class EvidencePolicy:
    """The rater and the leakage filter of one run (see the module docstring)."""

    def __init__(
        self,
        settings: RetrievalConfig | None = None,
        *,
        judge: Backend | None = None,
        store: EvidenceStore | None = None,
    ) -> None:
        """``judge`` rates domains that no list names, when the settings ask for it; ``store`` caches its answers."""
        self.settings = settings or RetrievalConfig()
        self.ratings = DomainRatings.load(self.settings.reliability_list)
        self.rater = ReliabilityRater(self.ratings, judge=judge if self.settings.judge_unknown_domains else None, store=store,
                                      enabled=self.settings.rate_sources)
        self.leakage = LeakageFilter(self.ratings, self.settings.leakage)

    async def screen(self, items: Sequence[Evidence], sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        """Every item back: unrated sources rated, and those a leakage rule catches marked dropped with the rule.

        Items that are already rated or already dropped keep what they have, so screening what the
        run's own pipeline produced changes nothing; a replay that never recorded a judgement leaves
        the source unknown rather than failing the sample.
        """
        rated = []
        for item in items:
            if item.kept and item.reliability == "unknown" and (item.domain or not self.rater.enabled):
                try:
                    reliability, _note = await self.rater.rate(item.domain, ledger)
                except StoreMiss:
                    reliability = "unknown"
                item = item.model_copy(update={"reliability": reliability})
            rated.append(item)
        screened, _report = self.leakage.apply([Candidate(evidence=e) for e in rated], sample.metadata.claim_date)
        return screened

    def searcher(self, answerer: QueryAnswerer) -> QueryAnswerer:
        """``answerer`` with its answers screened by this policy (the dropped ones come back marked)."""
        if isinstance(answerer, ScreenedAnswerer) and answerer.policy is self:
            return answerer
        return ScreenedAnswerer(answerer, self)


class ScreenedAnswerer:
    """A query answerer whose answers pass the run's evidence policy before an agent sees them."""

    def __init__(self, answerer: QueryAnswerer, policy: EvidencePolicy) -> None:
        self.answerer = answerer
        self.policy = policy

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        return await self.policy.screen(await self.answerer.answer(query, sample, ledger=ledger), sample, ledger)
