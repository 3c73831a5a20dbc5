"""Fetch requests that name no partition to read, differentially (KIP-227 sessions).

Kafka answers a Fetch at once when no partition is left to read (`KafkaApis.handleFetchRequest`:
`interesting.isEmpty`), and only then: a consumer closing its fetch session sends one, so a
broker that holds it until `max_wait_ms` slows every `close()`. The answers are compared, and
so is whether each was held: the fetches that must be answered at once ask for a
`max_wait_ms` of a minute, beyond the connection's 15 s timeout, so an answer arrives only if
it was not held (recorded as answered within `PROMPT_S`); the one Kafka holds, an incremental
fetch naming nothing while its session still has a partition, asks for `HELD_MS` and is
recorded as held that long. Nothing here sleeps: the brokers do the waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from conformance.conversation import Conversation, Topic
from conformance.differential import Scenario
from groupcoord.wire.generated.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
)

Run = Callable[[Scenario], None]
VERSION = 17
LONG_WAIT_MS = 60_000
PROMPT_S = 5.0
HELD_MS = 300


def _fetch(session_id: int, epoch: int, topics: list[FetchTopic],
           forgotten: list[ForgottenTopic] | None = None,
           max_wait_ms: int = LONG_WAIT_MS) -> FetchRequest:
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
                        session_id=session_id, session_epoch=epoch, topics=topics,
                        forgotten_topics_data=forgotten or [])


def _partition(topic: Topic, offset: int) -> list[FetchTopic]:
    return [FetchTopic(topic_id=topic.topic_id, partitions=[FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])]


def _call(c: Conversation, step: str, request: FetchRequest) -> tuple[FetchResponse, float]:
    """Send, record the answer (the session id only as given or not: ids are random), and
    return it with the seconds it took."""
    started = time.monotonic()
    answer = c.quiet(request, VERSION, FetchResponse)
    took = time.monotonic() - started
    c.record(step, {"error_code": answer.error_code, "session": answer.session_id != 0,
                    "responses": answer.responses})
    return answer, took


def test_fetches_with_nothing_to_read_are_answered_at_once(differential: Run) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        end = c.produce(topic, 0, [b"a", b"b", b"c"]) + 3

        _, took = _call(c, "full fetch naming no partition", _fetch(0, 0, []))
        c.record("full fetch naming no partition: at once", took < PROMPT_S)
        _, took = _call(c, "sessionless fetch naming no partition", _fetch(0, -1, []))
        c.record("sessionless fetch naming no partition: at once", took < PROMPT_S)

        # A session whose partition is at its end: nothing to read.
        opened, _ = _call(c, "full fetch opening a session at the end",
                          _fetch(0, 0, _partition(topic, end), max_wait_ms=0))
        session = opened.session_id
        _, took = _call(c, "incremental fetch naming nothing, the session's partition kept",
                        _fetch(session, 1, [], max_wait_ms=HELD_MS))
        c.record("incremental fetch naming nothing: held for max_wait_ms",
                 took >= HELD_MS / 1000)
        _, took = _call(c, "session close naming no partition", _fetch(session, -1, []))
        c.record("session close naming no partition: at once", took < PROMPT_S)
        _, _ = _call(c, "the closed session is gone", _fetch(session, 2, [], max_wait_ms=0))

        # A session whose last partition is forgotten: the fetch has nothing left to read.
        opened, _ = _call(c, "full fetch opening another session",
                          _fetch(0, 0, _partition(topic, end), max_wait_ms=0))
        _, took = _call(c, "incremental fetch forgetting the last partition",
                        _fetch(opened.session_id, 1, [], [ForgottenTopic(
                            topic_id=topic.topic_id, partitions=[0])]))
        c.record("incremental fetch forgetting the last partition: at once", took < PROMPT_S)
    differential(scenario)
