"""Share APIs over the wire against an in-process broker: ShareGroupHeartbeat,
ShareFetch / ShareAcknowledge (v0 layouts and v1-2), session epoch errors, long polling,
group configs, the share-offset admin APIs, and share state surviving a restart."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run, settle

from groupcoord.apis.share_v0_codec import with_v0
from groupcoord.logformat.batch import build_batch
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import (
    alter_share_group_offsets as alt,
)
from groupcoord.wire.generated import (
    delete_share_group_offsets as dlt,
)
from groupcoord.wire.generated import (
    describe_configs as dc,
)
from groupcoord.wire.generated import (
    describe_share_group_offsets as dso,
)
from groupcoord.wire.generated import (
    incremental_alter_configs as iac,
)
from groupcoord.wire.generated import share_acknowledge as sa
from groupcoord.wire.generated import share_fetch as sf
from groupcoord.wire.generated import share_group_heartbeat as sgh

G, T = "sg", "st"


def setup(b: InProcBroker, records: int = 10) -> bytes:
    topic = b.broker.topics.create(T, 1, {})
    if records:
        b.broker.append(T, 0, build_batch([(None, str(i).encode(), (), 0)
                                           for i in range(records)]), 0)
    return bytes(topic.topic_id)


async def set_configs(c: RawClient, group: str, **values: str) -> Any:
    res = iac.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
        iac.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
        for k, v in values.items()])
    resp = await c.call(iac.IncrementalAlterConfigsRequest(resources=[res]), 1,
                        iac.IncrementalAlterConfigsResponse)
    return resp.responses[0]


async def join(c: RawClient, member: str = "m1", version: int = 1) -> Any:
    """Join, then heartbeat until the partitions come: they are assigned once their share
    state is initialized, after the first heartbeat's reply (the interval is set to 0 so
    that the heartbeat after the initialization assigns them at once)."""
    await set_configs(c, G, share_assignment_interval_ms="0")
    cls = with_v0(sgh.ShareGroupHeartbeatRequest)
    response_cls = with_v0(sgh.ShareGroupHeartbeatResponse)
    req = cls(group_id=G, member_id=member, member_epoch=0, subscribed_topic_names=[T])
    joined = response = await c.call(req, version, response_cls)
    for _ in range(100):
        if response.error_code or (response.assignment is not None
                                   and response.assignment.topic_partitions):
            break
        await asyncio.sleep(0)
        response = await c.call(cls(group_id=G, member_id=joined.member_id,
                                    member_epoch=response.member_epoch), version, response_cls)
    return response


async def fetch(c: RawClient, tid: bytes, epoch: int, member: str = "m1",
                acks: list[tuple[int, int, list[int]]] | None = None, version: int = 1,
                wait: int = 0, timeout: float = 5.0) -> Any:
    part = sf.FetchPartition(partition_index=0, partition_max_bytes=1 << 20,
                             acknowledgement_batches=[
                                 sf.AcknowledgementBatch(first_offset=a, last_offset=b,
                                                         acknowledge_types=t)
                                 for a, b, t in acks or []])
    req = with_v0(sf.ShareFetchRequest)(
        group_id=G, member_id=member, share_session_epoch=epoch, max_wait_ms=wait,
        min_bytes=1, max_bytes=1 << 20, max_records=100,
        topics=[sf.FetchTopic(topic_id=tid, partitions=[part])])
    return await c.call(req, version, with_v0(sf.ShareFetchResponse), timeout)


async def ack(c: RawClient, tid: bytes, epoch: int, acks: list[tuple[int, int, list[int]]],
              member: str = "m1", version: int = 1) -> Any:
    req = with_v0(sa.ShareAcknowledgeRequest)(
        group_id=G, member_id=member, share_session_epoch=epoch,
        topics=[sa.AcknowledgeTopic(topic_id=tid, partitions=[sa.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[
                sa.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=t)
                for a, b, t in acks])])])
    return await c.call(req, version, with_v0(sa.ShareAcknowledgeResponse))


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in resp.responses for p in t.partitions for a in p.acquired_records]


def test_heartbeat_fetch_ack_and_session_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            assert (await set_configs(c, G, share_auto_offset_reset="earliest")).error_code == 0
            hb = await join(c)
            # Epoch 1 joins with nothing; epoch 2 assigns the initialized partition.
            assert hb.error_code == 0 and hb.member_epoch == 2
            resp = await fetch(c, tid, 0)
            assert resp.error_code == 0 and acquired(resp) == [(0, 9, 1)]
            assert resp.acquisition_lock_timeout_ms == 30_000
            assert resp.responses[0].partitions[0].records
            got = await ack(c, tid, 1, [(0, 4, [1]), (5, 5, [2]), (6, 9, [3])])
            assert got.responses[0].partitions[0].error_code == 0
            again = await fetch(c, tid, 2)
            assert acquired(again) == [(5, 5, 2)]
            assert (await ack(c, tid, 3, [(5, 5, [1]), (6, 6, [1])])
                    ).responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
            assert (await ack(c, tid, 0, [])).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
            assert (await fetch(c, tid, 9)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
            assert (await ack(c, tid, 1, [], member="other")
                    ).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
            assert (await fetch(c, tid, 0, acks=[(5, 5, [1])])).error_code == \
                ErrorCode.INVALID_REQUEST
            bad = await fetch(c, tid, 0)
            assert bad.error_code == 0
            bad = await fetch(c, tid, 1, acks=[(5, 4, [1])])
            assert bad.responses[0].partitions[0].acknowledge_error_code == \
                ErrorCode.INVALID_REQUEST
    run(go())


def test_v0_layouts_round_trip_with_the_broker(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b, 3)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            hb = await join(c, member="", version=0)
            assert hb.error_code == 0 and len(hb.member_id) == 22
            assert [tp.partitions for tp in hb.assignment.topic_partitions] == [[0]]
            resp = await fetch(c, tid, 0, member=hb.member_id, version=0)
            assert acquired(resp) == [(0, 2, 1)]
            done = await ack(c, tid, 1, [(0, 2, [1])], member=hb.member_id, version=0)
            assert done.error_code == 0 and done.responses[0].partitions[0].error_code == 0
    run(go())


def test_long_poll_wakes_on_append_and_on_release(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b, 0)
            c = await b.client()
            await join(c)
            await fetch(c, tid, 0)
            started = time.monotonic()
            waiting = asyncio.ensure_future(fetch(c, tid, 1, wait=5_000))
            await settle(lambda: b.broker.waiters.parked((T, 0)))
            b.broker.append(T, 0, build_batch([(None, b"x", (), 0)]), 0)
            resp = await waiting
            assert acquired(resp) == [(0, 0, 1)] and time.monotonic() - started < 3
            c2 = await b.client()
            await fetch(c2, tid, 0, member="m2")
            waiting = asyncio.ensure_future(fetch(c2, tid, 1, member="m2", wait=5_000))
            await settle(lambda: b.broker.waiters.parked((T, 0)))
            await ack(c, tid, 2, [(0, 0, [2])])
            assert acquired(await waiting) == [(0, 0, 2)]
    run(go())


def test_group_configs_describe_and_validate(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            assert (await set_configs(c, G, share_delivery_count_limit="11")).error_code == \
                ErrorCode.INVALID_CONFIG
            assert (await set_configs(c, G, share_unknown="1")).error_code == \
                ErrorCode.INVALID_CONFIG
            assert (await set_configs(c, G, share_record_lock_duration_ms="15000")
                    ).error_code == 0
            # Within the broker's group.share.min/max.partition.max.record.locks (100-4000).
            refused = await set_configs(c, G, share_partition_max_record_locks="4001")
            assert (refused.error_code, refused.error_message) == (
                ErrorCode.INVALID_CONFIG,
                "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.")
            req = dc.DescribeConfigsRequest(resources=[dc.DescribeConfigsResource(
                resource_type=32, resource_name=G, configuration_keys=None)])
            resp = await c.call(req, 4, dc.DescribeConfigsResponse)
            values = {e.name: (e.value, e.config_source) for e in resp.results[0].configs}
            assert values["share.record.lock.duration.ms"] == ("15000", 8)
            assert values["share.delivery.count.limit"] == ("5", 5)
    run(go())


def test_record_lock_bounds_come_from_the_broker(tmp_path: Path) -> None:
    """`serve --group-config group.share.max.partition.max.record.locks=6000` lets a group
    set up to 6000 record locks per share-partition."""
    async def go() -> None:
        extra = {"group.share.max.partition.max.record.locks": "6000"}
        async with InProcBroker(tmp_path, extra=extra) as b:
            c = await b.client()
            assert (await set_configs(c, G, share_partition_max_record_locks="6000")
                    ).error_code == 0
            refused = await set_configs(c, G, share_partition_max_record_locks="6001")
            assert refused.error_message == \
                "share.partition.max.record.locks must be in the range 100 to 6000 inclusive."
    run(go())


def test_offset_admin_apis(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await join(c)
            await fetch(c, tid, 0)
            await ack(c, tid, 1, [(0, 3, [1])])
            req = dso.DescribeShareGroupOffsetsRequest(groups=[
                dso.DescribeShareGroupOffsetsRequestGroup(group_id=G, topics=None)])
            resp = await c.call(req, 1, dso.DescribeShareGroupOffsetsResponse)
            part = resp.groups[0].topics[0].partitions[0]
            assert (part.start_offset, part.lag) == (4, 6)
            alter = alt.AlterShareGroupOffsetsRequest(group_id=G, topics=[
                alt.AlterShareGroupOffsetsRequestTopic(topic_name=T, partitions=[
                    alt.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                               start_offset=8)])])
            assert (await c.call(alter, 0, alt.AlterShareGroupOffsetsResponse)
                    ).error_code == ErrorCode.NON_EMPTY_GROUP
            hb = sgh.ShareGroupHeartbeatRequest(group_id=G, member_id="m1", member_epoch=-1)
            await c.call(hb, 1, sgh.ShareGroupHeartbeatResponse)
            got = await c.call(alter, 0, alt.AlterShareGroupOffsetsResponse)
            assert got.error_code == 0 and got.responses[0].partitions[0].error_code == 0
            resp = await c.call(req, 1, dso.DescribeShareGroupOffsetsResponse)
            assert resp.groups[0].topics[0].partitions[0].start_offset == 8
            delete = dlt.DeleteShareGroupOffsetsRequest(group_id=G, topics=[
                dlt.DeleteShareGroupOffsetsRequestTopic(topic_name=T)])
            assert (await c.call(delete, 0, dlt.DeleteShareGroupOffsetsResponse)
                    ).responses[0].error_code == 0
            resp = await c.call(req, 1, dso.DescribeShareGroupOffsetsResponse)
            assert resp.groups[0].topics == []
    run(go())


def test_alter_offsets_creates_the_group_and_describe_all_answers(tmp_path: Path) -> None:
    """KAFKA-19662: AlterShareGroupOffsets creates an unknown share group; DescribeShare-
    GroupOffsets with null topics answers (no topics) for an unknown group and for a group
    with no initialized partitions instead of never replying."""
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            setup(b)
            c = await b.client()

            def describe_all(group: str) -> Any:
                return dso.DescribeShareGroupOffsetsRequest(groups=[
                    dso.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
            for version in (0, 1):
                resp = await c.call(describe_all("unknown"), version,
                                    dso.DescribeShareGroupOffsetsResponse, 5.0)
                assert (resp.groups[0].error_code, resp.groups[0].topics) == (0, [])
            await join(c)  # a share group whose partitions are not initialized yet
            hb = sgh.ShareGroupHeartbeatRequest(group_id="bare", member_id="m1",
                                                member_epoch=0, subscribed_topic_names=["x"])
            assert (await c.call(hb, 1, sgh.ShareGroupHeartbeatResponse)).error_code == 0
            resp = await c.call(describe_all("bare"), 1, dso.DescribeShareGroupOffsetsResponse,
                                5.0)
            assert (resp.groups[0].error_code, resp.groups[0].topics) == (0, [])
            alter = alt.AlterShareGroupOffsetsRequest(group_id="fresh", topics=[
                alt.AlterShareGroupOffsetsRequestTopic(topic_name=T, partitions=[
                    alt.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                               start_offset=3)])])
            got = await c.call(alter, 0, alt.AlterShareGroupOffsetsResponse, 5.0)
            assert got.error_code == 0 and got.responses[0].partitions[0].error_code == 0
            resp = await c.call(describe_all("fresh"), 1, dso.DescribeShareGroupOffsetsResponse,
                                5.0)
            part = resp.groups[0].topics[0].partitions[0]
            assert (part.start_offset, part.lag) == (3, 7)
            hb = sgh.ShareGroupHeartbeatRequest(group_id="fresh", member_id="m9",
                                                member_epoch=0, subscribed_topic_names=[T])
            assert (await c.call(hb, 1, sgh.ShareGroupHeartbeatResponse)).error_code == 0
    run(go())


def test_max_bytes_or_max_records_zero_fetches_nothing_at_once(tmp_path: Path) -> None:
    """`SharePartitionManager.processShareFetch`: MaxBytes 0 (fetch.max.bytes=0) or
    MaxRecords 0 completes at once with no records, even with MaxWaitMs set."""
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await join(c)
            epoch = 0
            for max_bytes, max_records in ((0, 100), (1 << 20, 0)):
                req = sf.ShareFetchRequest(
                    group_id=G, member_id="m1", share_session_epoch=epoch, max_wait_ms=5_000,
                    min_bytes=1, max_bytes=max_bytes, max_records=max_records,
                    topics=[sf.FetchTopic(topic_id=tid, partitions=[
                        sf.FetchPartition(partition_index=0)])])
                started = time.monotonic()
                resp = await c.call(req, 1, sf.ShareFetchResponse, 3.0)
                assert time.monotonic() - started < 2.0
                assert resp.error_code == 0 and acquired(resp) == []
                assert not any(p.records for t in resp.responses for p in t.partitions)
                epoch += 1
            resp = await fetch(c, tid, epoch)
            assert acquired(resp) == [(0, 9, 1)]
    run(go())


def test_state_survives_restart(tmp_path: Path) -> None:
    async def first() -> bytes:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await join(c)
            await fetch(c, tid, 0)
            await ack(c, tid, 1, [(0, 2, [1]), (3, 3, [3]), (4, 4, [2])])
            return tid

    async def second(tid: bytes) -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await join(c, member="m9")
            resp = await fetch(c, tid, 0, member="m9")
            # 0-3 are done for good; 4 was released; 5-9 were released when the clean
            # shutdown closed the member's connection (a kill -9 would leave them at 1).
            assert acquired(resp) == [(4, 9, 2)]
    run(second(run(first())))


def test_acquisition_lock_expiry_redelivers_to_another_member(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b, 2)
            # Below the allowed minimum, set on the store directly to keep the test short.
            b.broker.shares.group_configs.set(G, {"share.auto.offset.reset": "earliest",
                                                  "share.record.lock.duration.ms": "300"})
            c1, c2 = await b.client(), await b.client()
            first = await fetch(c1, tid, 0)
            assert acquired(first) == [(0, 1, 1)]
            assert first.acquisition_lock_timeout_ms == 300
            assert acquired(await fetch(c2, tid, 0, member="m2")) == []
            # The parked fetch is woken by the lock expiry, not by its MaxWaitMs.
            started = time.monotonic()
            again = await fetch(c2, tid, 1, member="m2", wait=5_000)
            assert acquired(again) == [(0, 1, 2)] and time.monotonic() - started < 3
            late = await ack(c1, tid, 1, [(0, 1, [1])])
            assert late.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    run(go())


def test_delete_group_state_forgets_every_partition(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await fetch(c, tid, 0)
            await ack(c, tid, 1, [(0, 9, [1])])
            shares = b.broker.shares
            assert shares.state_partitions(G) == {tid: {0}}
            await shares.delete_group_state(G)
            assert shares.state_partitions(G) == {}
            # Re-initialized from the reset policy: everything is offered again.
            assert acquired(await fetch(c, tid, 0)) == [(0, 9, 1)]
    run(go())


def test_leaving_member_keeps_its_session_until_its_final_acknowledge(tmp_path: Path) -> None:
    """A closing consumer sends its leave heartbeat and its final ShareAcknowledge (epoch -1)
    at once; the heartbeat may win. As in Kafka (handleShareGroupHeartbeat never touches the
    share sessions), the acknowledgement still applies, and records a member held are
    released only by that final request (or its connection closing, or lock expiry)."""
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b, 3)
            c1, c2 = await b.client(), await b.client()
            await set_configs(c1, G, share_auto_offset_reset="earliest")
            await join(c1, member="m1")
            await join(c2, member="m2")
            assert acquired(await fetch(c1, tid, 0, member="m1")) == [(0, 2, 1)]
            leave = sgh.ShareGroupHeartbeatRequest(group_id=G, member_id="m1", member_epoch=-1)
            assert (await c1.call(leave, 1, sgh.ShareGroupHeartbeatResponse)).member_epoch == -1
            assert acquired(await fetch(c2, tid, 0, member="m2")) == []  # still m1's
            final = await ack(c1, tid, -1, [(0, 0, [1])], member="m1")
            assert final.error_code == 0
            assert [p.error_code for t in final.responses for p in t.partitions] == [0]
            # The final request ended m1's session and released offsets 1-2, which m1 never
            # acknowledged (SharePartitionManager.releaseSession).
            assert (G, "m1") not in b.broker.shares.sessions.sessions
            assert acquired(await fetch(c2, tid, 0, member="m2")) == [(1, 2, 2)]
    run(go())


def test_delete_groups_drops_a_share_groups_delivery_state(tmp_path: Path) -> None:
    from groupcoord.wire.generated import delete_groups as dg

    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            tid = setup(b)
            c = await b.client()
            await set_configs(c, G, share_auto_offset_reset="earliest")
            await join(c, member="m1")
            await fetch(c, tid, 0)
            await ack(c, tid, 1, [(0, 9, [1])])
            leave = sgh.ShareGroupHeartbeatRequest(group_id=G, member_id="m1", member_epoch=-1)
            await c.call(leave, 1, sgh.ShareGroupHeartbeatResponse)
            assert b.broker.shares.state_partitions(G) == {tid: {0}}
            resp = await c.call(dg.DeleteGroupsRequest(groups_names=[G]), 2,
                                dg.DeleteGroupsResponse)
            assert [(r.group_id, r.error_code) for r in resp.results] == [(G, 0)]
            assert b.broker.shares.state_partitions(G) == {}
    run(go())
