"""A batch run tunes the garbage collector for its length and leaves it as it found it."""

from __future__ import annotations

import gc

from debates.eval.run.collector import YOUNG_THRESHOLD, batch_collector


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
