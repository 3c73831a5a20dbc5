"""Consumer-group admin with the Java AdminClient and confluent-kafka's AdminClient.

Each client gets its own pair of classic groups on one topic: a live group (two members,
Stable) and a group whose only member consumed everything, committed and left (Empty, with
committed offsets). Both admin clients must then see what Kafka would return:

- listing groups (Java: Admin.listGroups; confluent-kafka: list_consumer_groups) with and
  without a state filter;
- describeConsumerGroups: state, assignor, members with client id, host as Kafka prints it
  ("/127.0.0.1"), group instance id and assignment;
- listConsumerGroupOffsets: every partition at its high watermark;
- deleteConsumerGroupOffsets (Java; confluent-kafka's Python AdminClient lacks the call):
  GROUP_SUBSCRIBED_TO_TOPIC on the live group, which consumes that topic; success on the
  Empty group, whose listing then lacks those partitions;
- deleteConsumerGroups: NON_EMPTY_GROUP for the live group, success for the Empty one,
  GROUP_ID_NOT_FOUND for a group that never existed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import confluent_io
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.group_admin import ConfluentGroupAdmin, JavaGroupAdmin
from helpers.group_checks import StreamProducer, committed, wait_settled
from helpers.group_members import Ledger, MemberHost, host_factory, wait_for

pytestmark = pytest.mark.interop

PARTITIONS = 6
HOST = "/127.0.0.1"


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(tmp_path_factory.mktemp("admin"),
                            ["--group-initial-rebalance-delay-ms", "0"])
    yield factory.create()
    factory.close()


def _consume_all(bootstrap: str, topic: str, group: str, ledger: Ledger, host: MemberHost,
                 members: set[int], ends: dict[int, int]) -> None:
    for idx in sorted(members):
        host.start(idx)
    wait_settled(bootstrap, group, topic, PARTITIONS, ledger, members)

    def done() -> bool:
        offsets = committed(bootstrap, group)
        return all(offsets.get((topic, p)) == ends[p] for p in range(PARTITIONS))

    wait_for(done, f"{group} to commit everything", 60)


def _setup(bootstrap: str, name: str, tmp: Path) -> tuple[str, str, str, MemberHost,
                                                            dict[int, int]]:
    topic, live, empty = f"adm-{name}", f"adm-{name}-live", f"adm-{name}-empty"
    confluent_io.create_topic(bootstrap, topic, PARTITIONS)
    producer = StreamProducer(bootstrap, topic)
    producer.start()
    producer.halt.wait(1.0)
    producer.finish()
    ends = confluent_io.high_watermarks(bootstrap, topic, PARTITIONS)
    solo = host_factory("confluent", bootstrap, topic, empty, "range", tmp)(Ledger(), "solo")
    try:
        _consume_all(bootstrap, topic, empty, solo.ledger, solo, {0}, ends)
        solo.leave(0)
    finally:
        solo.close()
    ledger = Ledger()
    pool = host_factory("confluent", bootstrap, topic, live, "range", tmp)(ledger, "pool")
    _consume_all(bootstrap, topic, live, ledger, pool, {0, 1}, ends)
    return topic, live, empty, pool, ends


@pytest.mark.parametrize("client", ["java", "confluent"])
def test_group_admin(client: str, admin_broker: BrokerProcess, tmp_path: Path,
                     request: pytest.FixtureRequest) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    bootstrap = admin_broker.bootstrap
    topic, live, empty, pool, ends = _setup(bootstrap, client, tmp_path)
    admin: Any = JavaGroupAdmin(bootstrap) if client == "java" else ConfluentGroupAdmin(bootstrap)
    try:
        _check_list(admin, live, empty)
        _check_describe(admin, topic, live, empty)
        all_offsets = {(topic, p): ends[p] for p in range(PARTITIONS)}
        assert admin.offsets(live) == all_offsets
        assert admin.offsets(empty) == all_offsets

        if admin.can_delete_offsets:
            assert admin.delete_offsets(live, topic, [0]) == {0: "GROUP_SUBSCRIBED_TO_TOPIC"}
            assert admin.delete_offsets(empty, topic, [0, 1]) == {0: None, 1: None}
            assert admin.offsets(empty) == {tp: o for tp, o in all_offsets.items()
                                            if tp[1] > 1}
            assert admin.offsets(live) == all_offsets

        missing = f"adm-{client}-never"
        assert admin.delete_groups([live, empty, missing]) == {
            live: "NON_EMPTY_GROUP", empty: None, missing: "GROUP_ID_NOT_FOUND"}
        listed = admin.list_groups([])
        assert live in listed and empty not in listed
        assert admin.offsets(live) == all_offsets
    finally:
        pool.close()


def _check_list(admin: Any, live: str, empty: str) -> None:
    def ours(states: list[str]) -> dict[str, tuple[str, bool]]:
        return {g: v for g, v in admin.list_groups(states).items() if g in (live, empty)}

    assert ours([]) == {live: ("Stable", False), empty: ("Empty", False)}
    assert ours(["Stable"]) == {live: ("Stable", False)}
    assert ours(["Empty"]) == {empty: ("Empty", False)}
    assert ours(["Empty", "Stable"]) == {live: ("Stable", False), empty: ("Empty", False)}
    assert ours(["PreparingRebalance"]) == {}


def _check_describe(admin: Any, topic: str, live: str, empty: str) -> None:
    described = admin.describe([live, empty])
    members = described[live].pop("members")
    assert described[live] == {"state": "Stable", "assignor": "range", "simple": False}
    assert [(c, h, i) for c, h, i, _ in members] == [("m0", HOST, None), ("m1", HOST, None)]
    # Range over one topic: the first member (by member id) gets the lower half.
    assert sorted(tp for *_, parts in members for tp in parts) == \
        [(topic, p) for p in range(PARTITIONS)]
    assert sorted(len(parts) for *_, parts in members) == [3, 3]
    assert described[empty] == {"state": "Empty", "assignor": "", "simple": False,
                                "members": []}
