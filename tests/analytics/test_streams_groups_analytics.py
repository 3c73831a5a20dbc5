"""Streams-group records in the analytics tables: the layouts of types 17 and 19-23 decode
what `groupcoord.logformat` writes, and a scale-out from one member to two reads as two
rebalances (the second from the group-epoch bump to the last member reconciling, with
its join reason) and as task movements between target epochs."""

from __future__ import annotations

from typing import Any

from groupcoord.analytics.read.reader import decode_record
from groupcoord.analytics.silver import membership, streams_groups
from groupcoord.coordinator.streams import records as rec
from groupcoord.coordinator.streams.member import MemberState, StreamsGroupMember
from groupcoord.coordinator.streams.tasks import TasksTuple, TasksWithEpochs
from groupcoord.logformat.generated import streams_group_topology as topo

G = "wordcount"


def tasks(epoch: int, **subtopologies: list[int]) -> TasksWithEpochs:
    return TasksWithEpochs({s.strip("_"): dict.fromkeys(p, epoch)
                            for s, p in subtopologies.items()})


def member(member_id: str, epoch: int, state: MemberState, assigned: TasksWithEpochs,
           previous: int = 0) -> StreamsGroupMember:
    return StreamsGroupMember(member_id, epoch, previous, state, process_id=f"p-{member_id}",
                              client_id="c", client_host="/h", topology_epoch=0,
                              rebalance_timeout_ms=1000, assigned=assigned)


def target(**subtopologies: list[int]) -> TasksTuple:
    return TasksTuple({s.strip("_"): frozenset(p) for s, p in subtopologies.items()})


def story() -> list[tuple[int, Any]]:
    m1 = member("m1", 2, MemberState.STABLE, tasks(2, _0=[0, 1], _1=[0, 1]))
    topology = topo.StreamsGroupTopologyValue(epoch=0, subtopologies=[topo.Subtopology(
        subtopology_id="0", source_topics=["words"], repartition_sink_topics=["r"],
        copartition_groups=[topo.CopartitionGroup(source_topics=[0])])])
    return [
        (1000, rec.member_metadata(G, m1)),
        (1000, rec.topology(G, topology)),
        (1000, rec.group_metadata(G, 2, 7, 0, {"num.standby.replicas": "0"})),
        (1000, rec.target_member(G, "m1", target(_0=[0, 1], _1=[0, 1]))),
        (1000, rec.target_metadata(G, 2, 1000)),
        (1000, rec.current_assignment(G, m1)),
        (2000, rec.member_metadata(G, member("m2", 0, MemberState.STABLE, TasksWithEpochs()))),
        (2000, rec.group_metadata(G, 3, 7, 0, {"num.standby.replicas": "0"})),
        (2000, rec.target_member(G, "m1", target(_0=[0], _1=[0]))),
        (2000, rec.target_member(G, "m2", target(_0=[1], _1=[1]))),
        (2000, rec.target_metadata(G, 3, 2000)),
        (2000, rec.current_assignment(G, member("m2", 3, MemberState.UNRELEASED_TASKS,
                                                TasksWithEpochs()))),
        (2000, rec.current_assignment(G, member("m1", 2, MemberState.UNREVOKED_TASKS,
                                                tasks(2, _0=[0], _1=[0]), previous=2))),
        (3000, rec.current_assignment(G, member("m1", 3, MemberState.STABLE,
                                                tasks(2, _0=[0], _1=[0]), previous=2))),
        (4000, rec.current_assignment(G, member("m2", 3, MemberState.STABLE,
                                                tasks(3, _0=[1], _1=[1])))),
    ]


def bronze() -> list[dict[str, Any]]:
    return [{"key": r.key_bytes(), "value": r.value_bytes(), "record_ts_ms": ts,
             "log_offset": i, "coord_partition": 0, "txn_outcome": None}
            for i, (ts, r) in enumerate(story())]


def test_streams_records_decode() -> None:
    decoded = [decode_record(row["key"], row["value"]) for row in bronze()]
    assert all(d is not None for d in decoded)
    assert decoded[1] is not None and decoded[1].record_type == 23
    assert decoded[1].value is not None
    assert decoded[1].value["Subtopologies"][0]["CopartitionGroups"] == \
        [{"SourceTopics": [0], "SourceTopicRegex": [], "RepartitionSourceTopics": []}]
    current = decoded[5]
    assert current is not None and current.value is not None
    assert current.value["ActiveTasks"] == [
        {"SubtopologyId": "0", "Partitions": [0, 1], "AssignmentEpochs": [2, 2]},
        {"SubtopologyId": "1", "Partitions": [0, 1], "AssignmentEpochs": [2, 2]}]


def test_scale_out_reads_as_rebalances_and_task_movements() -> None:
    t = membership.build(bronze(), {})
    assert t.skipped_unknown == 0
    assert [r["epoch"] for r in t.sg_epochs if r["kind"] == "group"] == [2, 3]
    events = [{"group_id": G, "kind": "member_joined", "member_id": "m2",
               "reason": "not provided", "generation": 2, "timestamp_ms": 2000, "detail": {}}]
    rebalances = streams_groups.streams_rebalances(t, events)
    assert [(r["from_epoch"], r["to_epoch"], r["start_ts_ms"], r["end_ts_ms"], r["joined"],
             r["tasks_moved"]) for r in rebalances] == [
        (None, 2, 1000, 1000, ["m1"], 4), (2, 3, 2000, 4000, ["m2"], 2)]
    assert rebalances[1]["reasons"] == ["member_joined: m2: not provided"]
    moves = [(m["assignment_epoch"], m["task"], m["from_member"], m["to_member"])
             for m in streams_groups.task_movements(t) if m["assignment_epoch"] == 3]
    assert moves == [(3, "0_1", "m1", "m2"), (3, "1_1", "m1", "m2")]
