"""Online migration with real clients: a group of classic confluent-kafka members
(default eager assignors) becomes a consumer group when a `group.protocol=consumer` member
joins, keeps consuming with mixed membership, and becomes a classic group again when that
member leaves. Nothing acknowledged is lost, and ownership stays exclusive at each stable
point."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_consumer_protocol import (
    BROKER_ARGS,
    PARTITIONS,
    Feeder,
    Group,
    describe,
)


def group_type(bootstrap: str, group: str) -> tuple[str, str]:
    """(type, state) from ListGroups v5, or ("", "") when the group is not listed."""
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated.list_groups import ListGroupsRequest

    with WireClient(bootstrap, timeout_s=10) as client:
        resp, _ = client.request(ListGroupsRequest(), 5)
    for g in resp.groups:
        if g.group_id == group:
            return g.group_type, g.group_state
    return "", ""


def _classic_settled(group: Group, members: int) -> bool:
    kind, state = group_type(group.bootstrap, group.group)
    owned = [set(p) for p in group.owned.values()]
    union: set[int] = set().union(*owned) if owned else set()
    return (kind, state) == ("classic", "Stable") and len(owned) == members and \
        sum(len(p) for p in owned) == len(union) == PARTITIONS


def test_classic_to_consumer_and_back(broker_factory: Any) -> None:
    from helpers.confluent_io import create_topic

    broker = broker_factory.create(BROKER_ARGS)
    topic = "t-migrate"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    feeder = Feeder(broker.bootstrap, topic)
    group = Group("confluent", broker.bootstrap, "migrating", topic)
    try:
        group.start(0, protocol="classic")
        group.start(1, protocol="classic")
        group._wait(lambda: _classic_settled(group, 2), "a stable classic group")
        group.start(2, protocol="consumer")
        group._wait(lambda: group_type(broker.bootstrap, "migrating")[0] == "consumer",
                    "the upgrade")
        group.wait_stable(3)   # mixed membership, one consumer group
        kinds = {m["client_id"]: m["type"] for m in _members(broker.bootstrap)}
        assert kinds == {"m0": 0, "m1": 0, "m2": 1}
        group.leave(2)
        group._wait(lambda: _classic_settled(group, 2), "the downgrade to a classic group")
        feeder.finish()
        group._wait(lambda: feeder.acked <= group.consumed, "every acked record consumed",
                    timeout=60, detail=lambda: sorted(feeder.acked - group.consumed)[:20])
    finally:
        feeder.finish()
        group.stop_all()


def _members(bootstrap: str) -> list[dict[str, Any]]:
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated.consumer_group_describe import ConsumerGroupDescribeRequest

    with WireClient(bootstrap, timeout_s=10) as client:
        resp, _ = client.request(ConsumerGroupDescribeRequest(group_ids=["migrating"]), 1)
    return [{"client_id": m.client_id, "type": m.member_type} for m in resp.groups[0].members]


assert describe  # re-exported for readers of this module's imports
