"""A node whose append waits inside PostgreSQL keeps serving: another connection holds the
partition's row lock, so the node's append transaction waits on it; meanwhile the node
answers ApiVersions and Metadata at once, and once the lock is released the produce is
acknowledged at the next offset, stored once."""

from __future__ import annotations

import time

import psycopg
import pytest
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.confluent_io import create_topic
from helpers.polling import wait_for
from helpers.postgres_cluster import ask, start_node
from helpers.wire_client import WireConnection

from groupcoord.logformat.batch import build_batch
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)

pytestmark = pytest.mark.timeout(120)

TOPIC = "held"
# Far below the seconds a stalled loop took, far above an idle node's answer.
PROMPT_S = 2.0


def _produce(value: bytes) -> ProduceRequest:
    batch = build_batch([(b"k", value, [], int(time.time() * 1000))])
    return ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
        name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch)])])


def _acked_offset(response: object) -> int:
    assert isinstance(response, ProduceResponse)
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == 0, answer
    return int(answer.base_offset)


def _appends_waiting_on_locks(storage_url: str) -> int:
    with psycopg.connect(storage_url, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                             " current_database() AND wait_event_type = 'Lock'"
                             " AND query LIKE '%partition_state%FOR UPDATE%'").fetchone()
    assert found is not None
    return int(found[0])


def _answered_promptly(node: BrokerProcess) -> None:
    started = time.monotonic()
    versions = ask(node, ApiVersionsRequest(client_software_name="probe",
                                            client_software_version="1"), 3, timeout=PROMPT_S)
    assert isinstance(versions, ApiVersionsResponse) and versions.error_code == 0
    metadata = ask(node, MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)],
                                         allow_auto_topic_creation=False), 9, timeout=PROMPT_S)
    assert isinstance(metadata, MetadataResponse)
    assert metadata.topics[0].error_code == 0
    assert time.monotonic() - started < PROMPT_S


def test_requests_are_answered_while_an_append_waits_on_a_row_lock(
        broker_factory: BrokerFactory, storage_url: str) -> None:
    node = start_node(broker_factory, storage_url, 1, [])
    create_topic(node.bootstrap, TOPIC, 1)
    assert _acked_offset(ask(node, _produce(b"first"), 9)) == 0

    producer = WireConnection("127.0.0.1", node.port, timeout=60)
    try:
        with psycopg.connect(storage_url) as holder:
            # Outside autocommit: the row stays locked until the rollback.
            holder.execute("SELECT 1 FROM partition_state WHERE topic = %s AND"
                           " partition_index = 0 FOR UPDATE", (TOPIC,))
            pending = producer.send(_produce(b"second"), 9)
            wait_for(lambda: _appends_waiting_on_locks(storage_url) > 0,
                     "the node's append to wait on the row lock", 30)
            _answered_promptly(node)
            # The append still waits: the answers came while it did.
            assert _appends_waiting_on_locks(storage_url) > 0
            holder.rollback()
        assert _acked_offset(producer.receive(pending)) == 1
    finally:
        producer.close()
    assert _acked_offset(ask(node, _produce(b"third"), 9)) == 2

    with psycopg.connect(storage_url, autocommit=True) as conn:
        batches = conn.execute("SELECT base_offset FROM partition_batches WHERE topic = %s"
                               " ORDER BY base_offset", (TOPIC,)).fetchall()
        end = conn.execute("SELECT log_end_offset FROM partition_state WHERE topic = %s",
                           (TOPIC,)).fetchone()
    assert [row[0] for row in batches] == [0, 1, 2]
    assert end == (3,)
