"""Streams groups over the wire against a broker subprocess: a member speaking
StreamsGroupHeartbeat as the Kafka Streams client does (join with the topology, learn the
missing internal topics, see the broker create them, get the tasks), its OffsetCommit v9
at its member epoch, and then what the admin APIs and `groupcoord groups` show:
ListGroups (type "streams"), StreamsGroupDescribe, DescribeGroups ("not a classic group"),
DeleteGroups (NON_EMPTY_GROUP while a member is in it), and lag per task.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from helpers import confluent_io
from helpers.broker import BrokerFactory
from helpers.polling import poll_until

from groupcoord.cli.wire_client import WireClient
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import delete_groups as dg
from groupcoord.wire.generated import describe_groups as dsg
from groupcoord.wire.generated import offset_commit as oc
from groupcoord.wire.generated import streams_group_describe as sgd
from groupcoord.wire.generated import streams_group_heartbeat as hb

pytestmark = pytest.mark.timeout(120)

GROUP = "cli-wordcount"
REPARTITION = f"{GROUP}-words-repartition"
CHANGELOG = f"{GROUP}-counts-changelog"
TOPOLOGY = hb.Topology(epoch=0, subtopologies=[
    hb.Subtopology(subtopology_id="0", source_topics=["cli-words"],
                   repartition_sink_topics=[REPARTITION]),
    hb.Subtopology(subtopology_id="1", repartition_source_topics=[hb.TopicInfo(name=REPARTITION)],
                   state_changelog_topics=[hb.TopicInfo(name=CHANGELOG, topic_configs=[
                       hb.KeyValue(key="cleanup.policy", value="compact")])]),
])


def groups(bootstrap: str, *args: str) -> Any:
    cmd = [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args,
           "--json"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def heartbeat(client: WireClient, epoch: int, tasks: list[hb.TaskIds] | None = None) -> Any:
    joining = epoch == 0
    request = hb.StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id="member-1", member_epoch=epoch,
        rebalance_timeout_ms=30_000 if joining else -1, topology=TOPOLOGY if joining else None,
        process_id="process-1" if joining else None, active_tasks=tasks or [],
        standby_tasks=[], warmup_tasks=[])
    response, _ = client.request(request, 1)
    assert response.error_code == 0, response.error_message
    return response


def test_streams_group_admin_and_cli(tmp_path: Any) -> None:
    factory = BrokerFactory(tmp_path)
    try:
        broker = factory.create(["--group-config", "group.streams.initial.rebalance.delay.ms=0"])
        bootstrap = broker.bootstrap
        confluent_io.create_topic(bootstrap, "cli-words", 2)
        confluent_io.produce_ids(bootstrap, "cli-words", range(10), 2)
        with WireClient(bootstrap) as client:
            first = heartbeat(client, 0)
            assert [s.status_code for s in first.status] == [3]  # MISSING_INTERNAL_TOPICS
            responses = [first]

            def assigned() -> bool:
                responses.append(heartbeat(client, responses[-1].member_epoch))
                return bool(responses[-1].active_tasks)

            poll_until(assigned, 20, interval=0.1)
            response = responses[-1]
            assert {t.subtopology_id: sorted(t.partitions) for t in response.active_tasks} == \
                {"0": [0, 1], "1": [0, 1]}
            epoch = response.member_epoch
            commit = oc.OffsetCommitRequest(
                group_id=GROUP, generation_id_or_member_epoch=epoch, member_id="member-1",
                topics=[oc.OffsetCommitRequestTopic(name="cli-words", partitions=[
                    oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=3,
                                                    committed_leader_epoch=-1,
                                                    committed_metadata="")])])
            committed, _ = client.request(commit, 9)
            assert committed.topics[0].partitions[0].error_code == 0
            stale = oc.OffsetCommitRequest(
                group_id=GROUP, generation_id_or_member_epoch=epoch + 1, member_id="member-1",
                topics=commit.topics)
            rejected, _ = client.request(stale, 9)
            assert rejected.topics[0].partitions[0].error_code == ErrorCode.STALE_MEMBER_EPOCH

            described, _ = client.request(sgd.StreamsGroupDescribeRequest(group_ids=[GROUP]), 1)
            group = described.groups[0]
            assert (group.error_code, group.group_state, group.assignor_name) == \
                (0, "Stable", "sticky")
            changelog = group.topology.subtopologies[1].state_changelog_topics[0]
            assert (changelog.name, changelog.partitions) == (CHANGELOG, 2)
            classic, _ = client.request(dsg.DescribeGroupsRequest(groups=[GROUP]), 6)
            assert classic.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
            assert classic.groups[0].error_message == f"Group {GROUP} is not a classic group."
            deleted, _ = client.request(dg.DeleteGroupsRequest(groups_names=[GROUP]), 2)
            assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP

            listed = groups(bootstrap, "list", "--type", "streams")
            assert listed == [{"group": GROUP, "type": "streams", "state": "Stable",
                               "protocol_type": "streams"}]
            members = groups(bootstrap, "describe", GROUP, "--members")
            assert [m["active"] for m in members["members"]] == [["0_0", "0_1", "1_0", "1_1"]]
            lag = groups(bootstrap, "describe", GROUP)
            rows = {(r["task"], r["topic"]): r for r in lag["tasks"]}
            assert (rows[("0_0", "cli-words")]["current_offset"],
                    rows[("0_0", "cli-words")]["log_end_offset"],
                    rows[("0_0", "cli-words")]["lag"]) == (3, 5, 2)
            assert rows[("1_0", REPARTITION)]["current_offset"] is None

            heartbeat(client, -1)
            deleted, _ = client.request(dg.DeleteGroupsRequest(groups_names=[GROUP]), 2)
            assert deleted.results[0].error_code == 0
            assert groups(bootstrap, "list", "--type", "streams") == []
    finally:
        factory.close()
