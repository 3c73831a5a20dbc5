"""The Java collection orders Kafka's answers depend on (`java.util.HashMap` iteration,
`java.util.PriorityQueue` ties); the expected values were printed by Java 17 for the same
keys and operations."""

from __future__ import annotations

from groupcoord.coordinator.streams.java_order import PriorityQueue, hash_map_order


def test_hash_map_order_by_bucket_then_insertion() -> None:
    assert hash_map_order(["wc-app-words-repartition", "wc-app-counts-changelog"]) == \
        ["wc-app-counts-changelog", "wc-app-words-repartition"]
    assert hash_map_order(["b", "a", "c"]) == ["a", "b", "c"]
    assert hash_map_order(["Aa", "BB"]) == ["Aa", "BB"]  # equal hashes: insertion order
    assert hash_map_order(["q", "b", "a"]) == ["q", "a", "b"]


def test_hash_map_with_an_initial_capacity() -> None:
    assert hash_map_order(["q", "b", "a"], 1) == ["q", "a", "b"]
    assert hash_map_order(["conformance-process", "conformance-process-2",
                           "conformance-process-3"], 3) == \
        ["conformance-process-3", "conformance-process", "conformance-process-2"]


def test_priority_queue_breaks_ties_like_java() -> None:
    queue: PriorityQueue[list[object]] = PriorityQueue(lambda a, b: int(a[0]) - int(b[0]))
    for item in ([1, "first"], [1, "second"], [1, "third"], [0, "zero"]):
        queue.add(list(item))
    assert [queue.poll() for _ in range(4)] == \
        [[0, "zero"], [1, "second"], [1, "third"], [1, "first"]]
    assert queue.poll() is None


def test_priority_queue_poll_update_offer() -> None:
    """The assignor's pattern: poll the least loaded, raise its load, offer it again."""
    queue: PriorityQueue[list[object]] = PriorityQueue(lambda a, b: int(a[0]) - int(b[0]))
    for item in ([2, "p1"], [0, "p2"], [0, "p3"]):
        queue.add(list(item))
    picked = []
    for _ in range(2):
        entry = queue.poll()
        assert entry is not None
        entry[0] = 1
        picked.append(entry[1])
        queue.add(entry)
    assert picked == ["p2", "p3"]
    assert [queue.poll() for _ in range(3)] == [[1, "p2"], [1, "p3"], [2, "p1"]]
