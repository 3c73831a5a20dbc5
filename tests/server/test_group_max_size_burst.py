"""Group size limits under a burst of concurrent joiners over real connections.

A broker subprocess runs with `group.max.size=100` (classic) or
`group.consumer.max.size=100` (KIP-848); 300 clients, one connection each, send their
joins at once. Classic ones use JoinGroup (MEMBER_ID_REQUIRED, direct and static members
mixed): 60 form a stable group first, then the other 240 burst in while those 60 rejoin,
so the burst meets a rebalancing group; the group never describes more than 100 members,
the 60 keep their seats and exactly 40 newcomers get in. Consumer-protocol ones use ConsumerGroupHeartbeat. Either way exactly
200 are told GROUP_MAX_SIZE_REACHED, the group describes 100 members, and so it does
again after a restart. The burst is bounded in count (300) and time (60 s).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from broker_inproc import InProcBroker, RawClient
from helpers.broker import BrokerFactory
from helpers.polling import wait_for_async

from groupcoord.coordinator.classic.consumer_protocol import encode_subscription
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import incremental_alter_configs as iac
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.consumer_group_describe import (
    DescribedGroup as ConsumerDescribedGroup,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.describe_groups import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)

pytestmark = pytest.mark.timeout(180)

LIMIT = 100
JOINERS = 300
FIRST_WAVE = 60
BURST_DEADLINE_S = 60.0
GROUP = "burst-group"
SUBSCRIPTION = encode_subscription(["burst-topic"])
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP


class StartLine:
    """Every joiner connects first (a few dozen at a time, within the listen backlog);
    the requests then all leave at once."""

    def __init__(self, joiners: int) -> None:
        self.gate = asyncio.Semaphore(50)
        self.waiting = joiners
        self.all_connected = asyncio.Event()
        self.go = asyncio.Event()
        self.refused = 0

    async def connect(self, port: int) -> RawClient:
        async with self.gate:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        self.waiting -= 1
        if self.waiting == 0:
            self.all_connected.set()
        await self.go.wait()
        return RawClient(reader, writer)

    async def release(self) -> float:
        await asyncio.wait_for(self.all_connected.wait(), BURST_DEADLINE_S)
        self.go.set()
        return time.monotonic()


@dataclass
class ClassicOutcome:
    k: int
    client: RawClient
    response: JoinGroupResponse


def join_version(k: int) -> int:
    return 3 if k % 3 == 1 else 9  # v3 joins at once, v9 needs a member id first


def instance_of(k: int) -> str | None:
    return f"instance-{k}" if k % 3 == 2 else None


async def classic_join(client: RawClient, k: int, member_id: str = "") -> JoinGroupResponse:
    """JoinGroup until the answer is not MEMBER_ID_REQUIRED."""
    while True:
        request = JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=60_000, rebalance_timeout_ms=30_000,
            member_id=member_id, group_instance_id=instance_of(k), protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)])
        response = await client.call(request, join_version(k), JoinGroupResponse,
                                     timeout=BURST_DEADLINE_S)
        if response.error_code != E.MEMBER_ID_REQUIRED:
            return response
        member_id = response.member_id


async def classic_joiner(port: int, k: int, line: StartLine) -> ClassicOutcome:
    client = await line.connect(port)
    response = await classic_join(client, k)
    if response.error_code == E.GROUP_MAX_SIZE_REACHED:
        line.refused += 1
    return ClassicOutcome(k, client, response)


async def rejoin(outcome: ClassicOutcome) -> ClassicOutcome:
    """A member of the stable group rejoining, as it does once told of a rebalance."""
    response = await classic_join(outcome.client, outcome.k, outcome.response.member_id)
    return ClassicOutcome(outcome.k, outcome.client, response)


async def sync(outcome: ClassicOutcome) -> int:
    joined = outcome.response
    assignments = [SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"")
                   for m in joined.members]
    request = SyncGroupRequest(
        group_id=GROUP, generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=instance_of(outcome.k), protocol_type="consumer",
        protocol_name="range", assignments=assignments)
    response = await outcome.client.call(request, 5, SyncGroupResponse, timeout=30.0)
    return int(response.error_code)


async def describe_classic(port: int) -> DescribedGroup:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = RawClient(reader, writer)
    try:
        response = await client.call(DescribeGroupsRequest(groups=[GROUP]), 5,
                                     DescribeGroupsResponse)
        return response.groups[0]
    finally:
        await client.close()


async def sync_all(outcomes: list[ClassicOutcome]) -> None:
    members = [o for o in outcomes if o.response.error_code == E.NONE]
    codes = await asyncio.wait_for(asyncio.gather(*(sync(o) for o in members)), 30.0)
    assert set(codes) <= {E.NONE}


async def until_state(port: int, state: str, deadline_s: float = 10.0) -> None:
    """Poll DescribeGroups until the group is in `state` (a condition, with a deadline)."""
    async def reached() -> bool:
        return (await describe_classic(port)).group_state == state

    await wait_for_async(reached, f"the group to reach {state}", deadline_s, interval=0.01)


async def until_newcomers_settled(port: int, line: StartLine, newcomers: int) -> None:
    """Poll DescribeGroups until every newcomer is either refused or in the group
    (parked in the join phase), checking the member count at every look."""
    async def settled() -> bool:
        members = len((await describe_classic(port)).members)
        assert members <= LIMIT, f"the group holds {members} members"
        return line.refused + members - FIRST_WAVE == newcomers

    await wait_for_async(settled, "the newcomers to settle", BURST_DEADLINE_S, interval=0.01)


async def classic_burst(port: int) -> tuple[list[ClassicOutcome], list[ClassicOutcome], float]:
    """A first wave forms a stable group. Its leader rejoins (as after a metadata
    change), which starts a rebalance; the other members rejoin while the newcomers
    burst in, all but one, which holds the join phase open until every newcomer has
    been refused or parked. Returns (first wave rejoined, newcomers, burst seconds)."""
    first_line = StartLine(FIRST_WAVE)
    first = [asyncio.create_task(classic_joiner(port, k, first_line))
             for k in range(FIRST_WAVE)]
    await first_line.release()
    stable = await asyncio.wait_for(asyncio.gather(*first), BURST_DEADLINE_S)
    assert all(o.response.error_code == E.NONE for o in stable)
    await sync_all(stable)
    leader = next(o for o in stable if o.response.member_id == o.response.leader)
    held = next(o for o in stable if o is not leader and instance_of(o.k) is not None)
    others = [o for o in stable if o is not leader and o is not held]
    line = StartLine(JOINERS - FIRST_WAVE)
    newcomers = [asyncio.create_task(classic_joiner(port, k, line))
                 for k in range(FIRST_WAVE, JOINERS)]
    await asyncio.wait_for(line.all_connected.wait(), BURST_DEADLINE_S)
    rejoins = [asyncio.create_task(rejoin(leader))]
    await until_state(port, "PreparingRebalance")
    rejoins += [asyncio.create_task(rejoin(o)) for o in others]
    began = await line.release()
    await until_newcomers_settled(port, line, len(newcomers))
    rejoins.append(asyncio.create_task(rejoin(held)))
    both = asyncio.gather(asyncio.gather(*rejoins), asyncio.gather(*newcomers))
    rejoined, joined = await asyncio.wait_for(both, BURST_DEADLINE_S)
    elapsed = time.monotonic() - began
    await sync_all([*rejoined, *joined])
    return rejoined, joined, elapsed


def test_classic_burst_admits_exactly_the_limit(broker_factory: BrokerFactory) -> None:
    broker = broker_factory.create([
        "--group-config", f"group.max.size={LIMIT}",
        "--group-initial-rebalance-delay-ms", "300", "--fsync", "never"])

    async def scenario() -> tuple[float, list[str]]:
        rejoined, joined, elapsed = await classic_burst(broker.port)
        # The members of the stable group keep their seats; newcomers fill the rest.
        assert [o.response.error_code for o in rejoined] == [E.NONE] * FIRST_WAVE
        codes = [o.response.error_code for o in joined]
        assert codes.count(E.NONE) == LIMIT - FIRST_WAVE, sorted(set(codes))
        assert codes.count(E.GROUP_MAX_SIZE_REACHED) == JOINERS - LIMIT
        member_ids = sorted(o.response.member_id for o in [*rejoined, *joined]
                            if o.response.error_code == E.NONE)
        described = await describe_classic(broker.port)
        for o in [*rejoined, *joined]:
            await o.client.close()
        assert described.group_state == "Stable"
        assert sorted(m.member_id for m in described.members) == member_ids
        return elapsed, member_ids

    elapsed, member_ids = asyncio.run(scenario())
    assert elapsed < BURST_DEADLINE_S
    broker.restart()
    described = asyncio.run(describe_classic(broker.port))
    assert sorted(m.member_id for m in described.members) == member_ids


async def consumer_joiner(port: int, k: int, line: StartLine
                          ) -> tuple[RawClient, ConsumerGroupHeartbeatResponse]:
    client = await line.connect(port)
    request = ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=f"{k:08d}-0000-4000-8000-000000000000", member_epoch=0,
        instance_id=f"instance-{k}" if k % 2 else None, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["burst-topic"], topic_partitions=[])
    response = await client.call(request, 1, ConsumerGroupHeartbeatResponse,
                                 timeout=BURST_DEADLINE_S)
    return client, response


async def describe_consumer(port: int) -> ConsumerDescribedGroup:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = RawClient(reader, writer)
    try:
        response = await client.call(ConsumerGroupDescribeRequest(group_ids=[GROUP]), 0,
                                     ConsumerGroupDescribeResponse)
        return response.groups[0]
    finally:
        await client.close()


def test_consumer_protocol_burst_admits_exactly_the_limit(
        broker_factory: BrokerFactory) -> None:
    broker = broker_factory.create([
        "--group-config", f"group.consumer.max.size={LIMIT}", "--fsync", "never"])

    async def scenario() -> tuple[float, list[str]]:
        line = StartLine(JOINERS)
        tasks = [asyncio.create_task(consumer_joiner(broker.port, k, line))
                 for k in range(JOINERS)]
        began = await line.release()
        results = await asyncio.wait_for(asyncio.gather(*tasks), BURST_DEADLINE_S)
        elapsed = time.monotonic() - began
        codes = [r.error_code for _, r in results]
        assert codes.count(E.NONE) == LIMIT, sorted(set(codes))
        assert codes.count(E.GROUP_MAX_SIZE_REACHED) == JOINERS - LIMIT
        member_ids = sorted(r.member_id for _, r in results if r.error_code == E.NONE)
        described = await describe_consumer(broker.port)
        for client, _ in results:
            await client.close()
        assert sorted(m.member_id for m in described.members) == member_ids
        return elapsed, member_ids

    elapsed, member_ids = asyncio.run(scenario())
    assert elapsed < BURST_DEADLINE_S
    broker.restart()
    described = asyncio.run(describe_consumer(broker.port))
    assert sorted(m.member_id for m in described.members) == member_ids


def test_no_group_level_size_limit_as_in_kafka(tmp_path: Path) -> None:
    """Kafka's `GroupConfig` has no per-group size limit (the limits are broker
    settings): IncrementalAlterConfigs on a GROUP resource refuses the names."""
    async def scenario() -> list[tuple[int, str | None]]:
        async with InProcBroker(tmp_path) as broker:
            client = await broker.client()
            answers = []
            for name in ("consumer.max.size", "group.max.size", "share.max.size"):
                resource = iac.AlterConfigsResource(
                    resource_type=GROUP_RESOURCE, resource_name=GROUP,
                    configs=[iac.AlterableConfig(name=name, config_operation=0, value="1")])
                response = await client.call(
                    iac.IncrementalAlterConfigsRequest(resources=[resource]), 1,
                    iac.IncrementalAlterConfigsResponse)
                answers.append((response.responses[0].error_code,
                                response.responses[0].error_message))
            return answers

    answers = asyncio.run(scenario())
    assert [code for code, _ in answers] == [E.INVALID_CONFIG] * 3, answers
    assert all("Unknown group config name" in (message or "") for _, message in answers)
