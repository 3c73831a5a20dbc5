"""Python's cyclic garbage collector and the coordinator's long-lived state.

A full (generation 2) collection walks every container object the process holds: with two
million committed offsets in memory one takes about 0.7 s on a 2-core EPYC, and the event loop
answers nothing meanwhile. CPython starts one whenever the objects promoted since the last
full collection exceed a quarter of the old generation, so a large shard load is followed by
such stalls as the state is replaced. What a shard load leaves in memory is long-lived
coordinator state, freed by reference counting when a record replaces it, so after a large
load it is moved out of the collector's reach (`gc.freeze`, the use CPython documents): later
full collections walk only what was allocated since. The same holds for what a started
broker process holds once it serves (modules, classes, generated codecs, the runtimes): a
full collection over a fresh broker takes 7-13 ms of CPU on that machine, paid again by every
later one; `groupcoord serve` freezes it once it has started.

Until then `groupcoord serve` runs with the collector paused: start-up allocates the
interpreter's and the broker's long-lived objects (modules, classes, codecs), which every
collection on the way walks again and again (11 M instructions, about 1.5 ms of a 50 ms
start to the first ApiVersions). What it made is collected and frozen in steps
(`settle_step`), and `settle_after_start` collects what came after the last one: no cyclic
garbage is frozen, and no step walks the whole heap while clients wait.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

# Loads smaller than this leave too little to matter (and tests load many small shards).
LARGE_LOAD_RECORDS = 100_000


def settle_after_load(records: int) -> bool:
    """After a shard replayed `records`: collect the young generations (so no fresh cyclic
    garbage is kept forever) and freeze everything alive. True if it froze."""
    if records < LARGE_LOAD_RECORDS:
        return False
    gc.collect(1)
    gc.freeze()
    return True


# Allocations (less deallocations) of container objects between two young collections;
# CPython's default is 700.
YOUNG_THRESHOLD = 20_000


def pause_until_started() -> None:
    """Stop automatic collections while the serving process starts (`settle_after_start`
    turns them on again)."""
    gc.disable()


def end_pause() -> None:
    """Collect automatically again (a start that failed before `settle_after_start`)."""
    gc.enable()


def settle_step() -> None:
    """While start-up runs with the collector paused (`pause_until_started`): collect what
    it allocated since the last step and freeze what is alive, so each later collection
    walks only what came after. The broker takes a step where a large share of its
    long-lived objects was just made (the modules imported after the bind, the logs
    opened), each a short stall, where the start's end walked them all three times (20-40
    ms each). Nothing when the collector runs (a broker in another program, or started)."""
    if gc.isenabled():
        return
    gc.collect()
    gc.freeze()


def collect_young_first() -> Iterator[None]:
    """Before `settle_after_start`: collect the young, then the middle generation, one per
    step, so that the caller (the event loop) can answer between them. Start-up allocates
    tens of thousands of containers with the collector paused (a 1,000-partition data dir
    adds its logs' segments and indexes), and one collection over them all held the loop
    for tens of milliseconds of CPU; the full one that follows then walks survivors only."""
    for generation in (0, 1):
        gc.collect(generation)
        yield


def settle_after_start() -> None:
    """Once the serving process has started: collect everything (no garbage is frozen),
    freeze what is alive, which lives as long as the process, and collect automatically
    from then on. Young collections then run every `YOUNG_THRESHOLD` allocations: each
    request allocates a few dozen short-lived containers (decoded request, records,
    response), freed by reference counting, so at CPython's default a young collection ran
    every couple of dozen requests, walking the state those requests had just created; it
    stays cheap, just rarer. The older generations keep their thresholds."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    gc.enable()
