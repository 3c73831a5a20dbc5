"""Cluster operations of the test broker: `KafkaBroker(nodes=N)` in-process and as a
subprocess (over the control endpoint's `/cluster` routes), and the pytest plugin's
`groupcoord_cluster` fixture with `--groupcoord-nodes`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.testing import KafkaBroker


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        for _ in range(20):
            try:
                [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
                return int(tp.offset)
            except KafkaException:
                continue  # the coordinator was loading: the client retries
        raise AssertionError("no committed offset")
    finally:
        consumer.close()


def _commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


@pytest.mark.parametrize("subprocess_broker", [False, True], ids=["inproc", "subprocess"])
def test_moving_stopping_and_starting_keep_committed_offsets(subprocess_broker: bool) -> None:
    with KafkaBroker(nodes=3, subprocess=subprocess_broker) as broker:
        assert len(broker.bootstrap_servers.split(",")) == 3
        assert broker.live_nodes() == [0, 1, 2]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert len(admin.list_topics(timeout=10).brokers) == 3
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
        _commit(broker.bootstrap_servers, "g", "t", 7)
        broker.move_group_coordinator("g", 2)
        assert _committed(broker.bootstrap_servers, "g", "t") == 7
        broker.stop_node(2)
        assert broker.live_nodes() == [0, 1]
        assert len(admin.list_topics(timeout=10).brokers) == 2
        _commit(broker.bootstrap_servers, "g", "t", 8)
        broker.start_node(2)
        assert broker.live_nodes() == [0, 1, 2]
        assert _committed(broker.bootstrap_servers, "g", "t") == 8


def test_unload_and_load_on_one_node() -> None:
    with KafkaBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
        _commit(broker.bootstrap_servers, "g", "t", 3)
        partition = broker.unload_group_coordinator("g")
        assert broker.load_group_coordinator("g") == partition
        assert _committed(broker.bootstrap_servers, "g", "t") == 3


def _post(base: str, path: str, body: bytes) -> int:
    request = urllib.request.Request(base + path, data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_the_control_endpoint_refuses_bad_cluster_requests() -> None:
    with KafkaBroker(nodes=2, subprocess=True) as broker:
        assert broker._control is not None
        base = broker._control.base
        with urllib.request.urlopen(base + "/cluster", timeout=30) as response:
            nodes = json.load(response)["nodes"]
        assert [n["node_id"] for n in nodes] == [0, 1]
        assert _post(base, "/cluster/stop-node", b'{"node": 7}') == 400
        assert _post(base, "/cluster/move-group", b'{"group": 1, "node": 0}') == 400
        assert _post(base, "/cluster/move-group", b"[]") == 400
        assert _post(base, "/cluster/nothing", b"{}") == 404
        assert _post(base, "/clock/advance", b'{"ms": 1}') == 409  # system clock


def test_one_node_refuses_node_operations() -> None:
    with KafkaBroker(subprocess=True) as broker:
        assert broker._control is not None
        assert _post(broker._control.base, "/cluster/stop-node", b'{"node": 0}') == 400


USER_TESTS = textwrap.dedent("""
    def test_cluster(groupcoord_cluster):
        assert groupcoord_cluster.live_nodes() == [0, 1]
        groupcoord_cluster.stop_node(1)
        assert groupcoord_cluster.live_nodes() == [0]
""")


def test_the_nodes_option_sizes_the_cluster_fixture(tmp_path: Path) -> None:
    (tmp_path / "test_user_cluster.py").write_text(USER_TESTS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--groupcoord-nodes=2", str(tmp_path)],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
