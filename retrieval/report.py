"""What retrieval did for each sample of a run, collected as it happens and handed to the verdict.

The evidence sources of a run are shared by all its samples (one store, one fetcher, one set of
providers), so every call they make is logged under the sample it serves; at the end of a sample
:meth:`EvidenceLog.report` gives its :class:`~m3d_agents.verdict.EvidenceReport`: which providers ran,
how many results each gave, which failed and why, what was kept and dropped, and how many requests
went out to the network. A provider that could not even be built (no key) is listed for every
sample with the reason, so a run without evidence always says why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from m3d_agents.evidence import Evidence
from m3d_agents.redaction import redact
from m3d_agents.verdict import EvidenceReport, ProviderReport, RetrievalMode

PAGES = "pages"
"""The provider name under which page fetches are logged."""
IMAGES = "images"
"""The provider name under which downloads of matched images are logged."""


@dataclass
class _SampleLog:
    providers: dict[str, ProviderReport] = field(default_factory=dict)
    kept: set[str] = field(default_factory=set)
    dropped: dict[str, str] = field(default_factory=dict)
    pages: set[str] = field(default_factory=set)
    undated: set[str] = field(default_factory=set)
    lost: list[str] = field(default_factory=list)
    network_fetches: int = 0

    def provider(self, name: str) -> ProviderReport:
        if name not in self.providers:
            self.providers[name] = ProviderReport(provider=name)
        return self.providers[name]


def drop_kind(reason: str) -> str:
    """A short name for why an item was dropped, from its reason text."""
    if "leakage rule" in reason:
        return reason.split("leakage rule", 1)[1].split(":", 1)[0].strip()
    if "not in English" in reason:
        return "language"
    if reason.startswith("same text as"):
        return "duplicate"
    return "other"


class EvidenceLog:
    """Per-sample records of every provider call; safe for the concurrent samples of one event loop."""

    def __init__(self, mode: RetrievalMode, note: str = "", not_run: dict[str, str] | None = None,
                 image_providers: Iterable[str] = ()) -> None:
        self.mode: RetrievalMode = mode
        self.note = note
        self.not_run = dict(not_run or {})
        self.image_providers = set(image_providers)
        """Providers that search for a post's image: a post without one has no use for them, and their state is no problem of its."""
        self._samples: dict[str, _SampleLog] = {}
        self._without_image: set[str] = set()

    def without_image(self, sample_id: str) -> None:
        """The sample has no image, so reverse image search had nothing to look for."""
        self._without_image.add(sample_id)

    def _log(self, sample_id: str) -> _SampleLog:
        return self._samples.setdefault(sample_id, _SampleLog())

    def answered(self, sample_id: str, provider: str, items: int, *, from_store: bool) -> None:
        entry = self._log(sample_id).provider(provider)
        entry.calls += 1
        entry.items += items
        entry.from_store += int(from_store)

    def failed(self, sample_id: str, provider: str, reason: str) -> None:
        """Record a failure; the reason is redacted here, since it reaches the verdict and the run's rows."""
        entry = self._log(sample_id).provider(provider)
        entry.calls += 1
        entry.failures.append(redact(reason))

    def lost(self, sample_id: str, line: str) -> None:
        """A page the parser lost (crashed, timed out, out of memory), as its one line; redacted here."""
        entries = self._log(sample_id).lost
        line = redact(line)
        if line not in entries:
            entries.append(line)

    def network_fetch(self, sample_id: str) -> None:
        self._log(sample_id).network_fetches += 1

    def evidence(self, sample_id: str, items: Iterable[Evidence]) -> None:
        """Items that reached the sample's strategy (kept) or were looked at and left out (dropped)."""
        log = self._log(sample_id)
        for item in items:
            if item.kept:
                log.kept.add(item.id)
                log.dropped.pop(item.id, None)
                if item.url:
                    log.pages.add(item.id)
                    if item.published is None:
                        log.undated.add(item.id)
            elif item.id not in log.kept:
                log.dropped[item.id] = drop_kind(item.reason)

    def report(self, sample_id: str) -> EvidenceReport:
        """The sample's report; its records are released (a sample is reported once)."""
        log = self._samples.pop(sample_id, _SampleLog())
        no_image = sample_id in self._without_image
        self._without_image.discard(sample_id)
        providers = [ProviderReport(provider=name, not_run=why) for name, why in self.not_run.items()
                     if not (no_image and name in self.image_providers)]
        providers += sorted(log.providers.values(), key=lambda p: p.provider)
        return EvidenceReport(
            mode=self.mode, note=self.note, providers=providers, kept=len(log.kept), dropped=len(log.dropped),
            dropped_why=dict(Counter(log.dropped.values())), network_fetches=log.network_fetches,
            pages_kept=len(log.pages), undated_pages_kept=len(log.undated), items_lost=list(log.lost),
        )
