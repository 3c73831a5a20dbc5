"""Kafka's `GroupCoordinatorService` answers an operation whose write to
`__consumer_offsets` failed through `CoordinatorOperationExceptionHelper`: NOT_LEADER_OR_FOLLOWER
and KAFKA_STORAGE_ERROR become NOT_COORDINATOR; UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS
and REQUEST_TIMED_OUT COORDINATOR_NOT_AVAILABLE; MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE and
INVALID_FETCH_SIZE UNKNOWN_SERVER_ERROR; anything else is answered as it is."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run, settle

from groupcoord.apis.errors import ApiError
from groupcoord.server.runtime.append_errors import coordinator_append_error
from groupcoord.server.runtime.shard_task import ShardState
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import offset_commit

GROUP = "append-errors-group"

KAFKA_MAPPING = [
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    (E.INVALID_FETCH_SIZE, E.UNKNOWN_SERVER_ERROR),
    # Not in the helper's table (the transaction coordinator's has it): answered as it is.
    (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),
    (E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR),
]


@pytest.mark.parametrize(("log_code", "answer"), KAFKA_MAPPING)
def test_each_log_error_maps_as_kafka(log_code: int, answer: int) -> None:
    assert coordinator_append_error(ApiError(log_code)) == answer


def test_a_disk_error_is_not_coordinator_and_a_missing_partition_not_available() -> None:
    assert coordinator_append_error(OSError(errno.ENOSPC, "No space left")) == E.NOT_COORDINATOR
    assert coordinator_append_error(KeyError(("__consumer_offsets", 0))) \
        == E.COORDINATOR_NOT_AVAILABLE


async def _commit(client: Any, offset: int) -> int:
    request = offset_commit.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
        topics=[offset_commit.OffsetCommitRequestTopic(name="t", partitions=[
            offset_commit.OffsetCommitRequestPartition(partition_index=0,
                                                       committed_offset=offset)])])
    resp = await client.call(request, 8, offset_commit.OffsetCommitResponse)
    return int(resp.topics[0].partitions[0].error_code)


@pytest.mark.parametrize(("raised", "answer"), [
    (OSError(errno.EIO, "Input/output error"), E.NOT_COORDINATOR),
    (KeyError(("__consumer_offsets", 0)), E.COORDINATOR_NOT_AVAILABLE),
    (ApiError(E.MESSAGE_TOO_LARGE), E.UNKNOWN_SERVER_ERROR),
], ids=["disk", "no-partition", "too-large"])
def test_a_commit_whose_append_fails_gets_kafkas_answer_and_the_next_one_works(
        tmp_path: Path, raised: BaseException, answer: int) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            b.broker.topics.create("t", 1, {})
            client = await b.client()
            groups = b.broker.groups
            assert await _commit(client, 1) == 0
            task = groups.shards[groups.partition_for(GROUP)]
            real = groups.append

            def failing(*_args: Any, **_kwargs: Any) -> Any:
                raise raised
            groups.append = failing
            assert await _commit(client, 2) == answer
            groups.append = real
            await settle(lambda: task.reloads == 1 and task.state is ShardState.ACTIVE,
                         turns=100_000)
            assert await _commit(client, 3) == 0
    run(go())
