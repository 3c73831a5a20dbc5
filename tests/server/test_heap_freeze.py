"""After a large shard load, and once `serve` has started, what is alive is frozen out of the
cyclic collector's reach; cyclic garbage is collected first, never frozen."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from groupcoord.server.runtime import heap


@pytest.fixture()
def unfrozen() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def cyclic_garbage() -> weakref.ref[object]:
    """A weak reference to an object in a cycle no one else holds: only the collector
    frees it."""
    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_large_load_freezes_what_is_alive(unfrozen: None) -> None:
    state = [[i] for i in range(1_000)]  # containers the collector would walk
    assert not heap.settle_after_load(heap.LARGE_LOAD_RECORDS - 1)
    assert gc.get_freeze_count() == 0
    assert heap.settle_after_load(heap.LARGE_LOAD_RECORDS)
    assert gc.get_freeze_count() >= len(state)


def test_young_cyclic_garbage_is_collected_not_frozen(unfrozen: None) -> None:
    gone = cyclic_garbage()
    assert gone() is not None
    heap.settle_after_load(heap.LARGE_LOAD_RECORDS)
    assert gone() is None


def test_after_start_everything_alive_is_frozen_and_garbage_collected(unfrozen: None) -> None:
    gone = cyclic_garbage()
    kept = [[i] for i in range(100)]
    heap.settle_after_start()
    assert gone() is None
    assert gc.get_freeze_count() >= len(kept)


def test_after_start_young_collections_are_rarer_and_older_ones_unchanged(
        unfrozen: None) -> None:
    _, older, oldest = gc.get_threshold()
    heap.settle_after_start()
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, older, oldest)


def test_a_start_up_step_collects_garbage_and_freezes_what_is_alive(unfrozen: None) -> None:
    gone = cyclic_garbage()
    kept = [[i] for i in range(100)]
    try:
        heap.pause_until_started()
        heap.settle_step()
        assert gone() is None
        assert gc.get_freeze_count() >= len(kept)
        assert not gc.isenabled()  # still paused: `settle_after_start` ends the pause
    finally:
        heap.end_pause()


def test_a_start_up_step_does_nothing_while_the_collector_runs(unfrozen: None) -> None:
    kept = [[i] for i in range(100)]
    heap.settle_step()
    assert gc.get_freeze_count() == 0 and len(kept) == 100


def test_the_collector_is_paused_until_the_start_has_settled(unfrozen: None) -> None:
    assert gc.isenabled()
    try:
        heap.pause_until_started()
        assert not gc.isenabled()
        heap.settle_after_start()
        assert gc.isenabled()
        heap.pause_until_started()
        heap.end_pause()  # a start that failed before it settled
        assert gc.isenabled()
    finally:
        gc.enable()
