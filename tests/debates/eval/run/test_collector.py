"""A batch run tunes the garbage collector for its length and leaves it as it found it."""

from __future__ import annotations

import gc
import weakref

import pytest

from debates.eval.run import collector
from debates.eval.run.collector import YOUNG_THRESHOLD, after_sample, batch_collector


def test_a_run_freezes_what_was_alive_and_restores_everything_after() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with batch_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > 0
        with batch_collector():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0, "an overlapping run's end restores nothing while another goes on"
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_cycles_made_during_a_run_are_still_collected() -> None:
    with batch_collector():
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() > 0


def test_a_freeze_of_the_process_s_own_is_kept() -> None:
    gc.freeze()
    try:
        with batch_collector():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0, "the process's own freeze outlives the run"
    finally:
        gc.unfreeze()


def test_the_settings_come_back_when_a_run_fails() -> None:
    before = gc.get_threshold()
    try:
        with batch_collector():
            raise RuntimeError("the run failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


class Held:
    """Something a finished sample leaves in a cycle (an encoded request body, say)."""

    def __init__(self) -> None:
        self.body = bytearray(1_000_000)
        self.me = self


def test_a_finished_samples_cycles_in_the_oldest_generation_are_collected_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector, "_last_full", 0.0)
    with batch_collector():
        held = Held()
        gone = weakref.ref(held)
        gc.collect(1)  # alive through a collection of the middle generation: moved to the oldest, as a sample's objects are
        del held
        for _ in range(3):
            gc.collect(1)  # what the run's own young and middle collections do: the oldest is not looked at
        assert gone() is not None
        assert after_sample()
        assert gone() is None


def test_full_collections_after_samples_are_spaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector, "_last_full", 0.0)
    monkeypatch.setattr(collector, "FULL_COLLECTION_S", 3600.0)
    with batch_collector():
        assert after_sample()
        held = Held()
        gone = weakref.ref(held)
        del held
        assert not after_sample(), "a second sample done within the interval waits for the next collection"
        monkeypatch.setattr(collector, "FULL_COLLECTION_S", 0.0)
        assert after_sample() and gone() is None
