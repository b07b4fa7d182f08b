"""Who runs what, and who is blamed when a worker dies: only the sample that kills, found by isolation."""

from __future__ import annotations

from debates.eval.run.dispatch import Dispatcher, Item, Slot
from m3d_agents.sample import Sample


def items(count: int) -> list[Item]:
    return [(i, Sample(id=f"s{i}", text=f"post {i}")) for i in range(count)]


def ids(sent: list[Item]) -> list[str]:
    return [sample.id for _, sample in sent]


def ready(*shares: int) -> list[Slot]:
    return [Slot(f"w{i}", share, ready=True) for i, share in enumerate(shares)]


def test_samples_go_out_in_order_up_to_each_share_and_not_to_a_worker_that_is_not_ready() -> None:
    slots = ready(2, 3)
    slots.append(Slot("starting", 4))
    dispatcher = Dispatcher(items(10), slots, max_worker_deaths=3)
    assert ids(dispatcher.assign(slots[0])) == ["s0", "s1"]
    assert ids(dispatcher.assign(slots[1])) == ["s2", "s3", "s4"]
    assert dispatcher.assign(slots[2]) == []
    assert dispatcher.assign(slots[0]) == []
    dispatcher.finished(slots[0], "s1")
    assert ids(dispatcher.assign(slots[0])) == ["s5"]


def test_the_samples_of_a_dead_worker_run_again_isolated_and_an_innocent_one_is_never_charged() -> None:
    slots = ready(4, 4)
    dispatcher = Dispatcher(items(12), slots, max_worker_deaths=2)
    dispatcher.assign(slots[0])
    dispatcher.assign(slots[1])
    assert dispatcher.lost(slots[0]) == []
    assert dispatcher.tries == {}
    slots[0].ready = True
    # Both workers drain for the two halves; the busy one takes no new samples meanwhile.
    assert ids(dispatcher.assign(slots[0])) == ["s0", "s1"]
    assert slots[0].isolated
    assert dispatcher.assign(slots[1]) == []
    for sample_id in ("s4", "s5", "s6", "s7"):
        dispatcher.finished(slots[1], sample_id)
    assert ids(dispatcher.assign(slots[1])) == ["s2", "s3"]
    # The half holding the killer dies again, and is split again; the other half clears.
    dispatcher.finished(slots[0], "s0")
    dispatcher.finished(slots[0], "s1")
    assert dispatcher.lost(slots[1]) == []
    slots[1].ready = True
    assert ids(dispatcher.assign(slots[0])) == ["s2"]
    assert ids(dispatcher.assign(slots[1])) == ["s3"]
    dispatcher.finished(slots[0], "s2")
    # Alone, s3 dies: now it is charged, and at max_worker_deaths it is given up.
    assert dispatcher.lost(slots[1]) == []
    assert dispatcher.tries == {"s3": 1}
    slots[1].ready = True
    assert ids(dispatcher.assign(slots[1])) == ["s3"]
    given_up = dispatcher.lost(slots[1])
    assert [(g.item[1].id, g.tries) for g in given_up] == [("s3", 2)]
    assert dispatcher.tries == {"s3": 2}
    assert dispatcher.retried == {"s0", "s1", "s2", "s3"}
    assert dispatcher.deaths == 4
    slots[1].ready = True
    # Back to normal: the rest in order, and the run ends when everything has a row.
    assert ids(dispatcher.assign(slots[0])) == ["s8", "s9", "s10", "s11"]
    for sample_id in ("s8", "s9", "s10", "s11"):
        dispatcher.finished(slots[0], sample_id)
    assert dispatcher.done


def test_one_worker_alone_runs_the_suspects_one_group_at_a_time() -> None:
    slots = ready(3)
    dispatcher = Dispatcher(items(5), slots, max_worker_deaths=3)
    dispatcher.assign(slots[0])
    dispatcher.lost(slots[0])
    slots[0].ready = True
    assert ids(dispatcher.assign(slots[0])) == ["s0"]
    assert dispatcher.assign(slots[0]) == []
    dispatcher.finished(slots[0], "s0")
    assert ids(dispatcher.assign(slots[0])) == ["s1", "s2"]
    dispatcher.finished(slots[0], "s1")
    dispatcher.finished(slots[0], "s2")
    assert ids(dispatcher.assign(slots[0])) == ["s3", "s4"]
