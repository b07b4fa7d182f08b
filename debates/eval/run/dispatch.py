"""Which sample runs on which worker, and which sample is blamed when a worker dies.

Samples go out in order, each worker keeping its share of the run's concurrency in flight. When a
worker process dies, every sample it had in flight is lost, and any of them may have killed it.
Blaming all of them would let one sample that crashes its worker (a native library fault, memory
blown by one huge image) use up the tries of every innocent sample beside it. So the lost
samples are *suspects*, and suspects run in isolation: a worker that takes a group of suspects
runs nothing else. A group that dies is split in two; a group that finishes clears its members.
A sample is charged a try only when a worker dies while it was the only sample in flight there,
so only the sample that kills is ever charged; after ``max_worker_deaths`` charges it is given up (and
recorded as an error). A group of k suspects holding one killer is resolved in about log2(k)
rounds of isolated runs.

The dispatcher is plain bookkeeping, without Ray, so its rules are tested directly.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from m3d_agents.sample import Sample

Item = tuple[int, Sample]
"""A sample and its index in the data set."""


@dataclass
class Slot:
    """One worker position of the run; a worker that dies is replaced in the same slot."""

    name: str
    share: int
    ready: bool = False
    in_flight: dict[str, Item] = field(default_factory=dict)
    isolated: bool = False
    """Runs a group of suspects and nothing else."""
    draining: bool = False
    """Takes no new samples, so that it can run a group of suspects once its samples finish."""


@dataclass
class GivenUp:
    item: Item
    tries: int


class Dispatcher:
    def __init__(self, todo: list[Item], slots: list[Slot], max_worker_deaths: int) -> None:
        if max_worker_deaths < 1:
            raise ValueError("max_worker_deaths must be at least 1")
        self.pending: deque[Item] = deque(todo)
        self.suspects: deque[list[Item]] = deque()
        self.slots = slots
        self.max_worker_deaths = max_worker_deaths
        self.tries: dict[str, int] = {}
        self.deaths = 0
        self.retried: set[str] = set()

    @property
    def done(self) -> bool:
        return not self.pending and not self.suspects and not any(slot.in_flight for slot in self.slots)

    def assign(self, slot: Slot) -> list[Item]:
        """The samples to send to ``slot`` now (none while it is not ready, runs suspects, or drains)."""
        if not slot.ready or slot.isolated:
            return []
        if not self.suspects:
            slot.draining = False
        elif not slot.draining:
            draining = sum(1 for s in self.slots if s.draining)
            slot.draining = draining < len(self.suspects)
        if slot.draining:
            if slot.in_flight:
                return []
            group = self.suspects.popleft()
            slot.draining, slot.isolated = False, True
            slot.in_flight = {sample.id: (index, sample) for index, sample in group}
            return group
        sent: list[Item] = []
        while self.pending and len(slot.in_flight) < slot.share:
            index, sample = self.pending.popleft()
            slot.in_flight[sample.id] = (index, sample)
            sent.append((index, sample))
        return sent

    def finished(self, slot: Slot, sample_id: str) -> None:
        """A sample of ``slot`` ended with a row (a verdict or a recorded error)."""
        slot.in_flight.pop(sample_id, None)
        if slot.isolated and not slot.in_flight:
            slot.isolated = False

    def lost(self, slot: Slot) -> list[GivenUp]:
        """The worker of ``slot`` died: its samples become suspects; returns those now given up."""
        lost = list(slot.in_flight.values())
        slot.in_flight = {}
        slot.ready = slot.isolated = slot.draining = False
        self.deaths += 1
        self.retried.update(sample.id for _, sample in lost)
        if not lost:
            return []
        if len(lost) > 1:
            middle = len(lost) // 2
            self.suspects.extendleft([lost[middle:], lost[:middle]])
            return []
        index, sample = lost[0]
        tries = self.tries.get(sample.id, 0) + 1
        self.tries[sample.id] = tries
        if tries >= self.max_worker_deaths:
            return [GivenUp((index, sample), tries)]
        self.suspects.appendleft(lost)
        return []
