"""Foundation must-show 1: real clients produce and read back keyed records intact.

confluent-kafka, kafka-python, aiokafka and the Java client each create a 6-partition topic
through their admin API, produce 10,000 keyed records with headers and explicit timestamps
using each compression codec they support, then read the topic back with assign() and a
seek to the beginning. Every record must arrive exactly once, in order per partition, with
key, value, headers and timestamp unchanged, at dense offsets from 0.

One broker serves the whole module (each case uses its own topic) to keep the suite short.
"""

from __future__ import annotations

import pytest
from helpers.broker import BrokerProcess
from helpers.clients import AiokafkaAdapter, ClientAdapter, ConfluentAdapter, KafkaPythonAdapter
from helpers.java import JavaAdapter
from helpers.workload import Workload, check_consumed

pytestmark = pytest.mark.interop

RECORDS = 10_000
PARTITIONS = 6
ADAPTERS: dict[str, ClientAdapter] = {
    a.name: a for a in (ConfluentAdapter(), KafkaPythonAdapter(), AiokafkaAdapter(), JavaAdapter())
}
CASES = [(name, codec) for name, adapter in ADAPTERS.items() for codec in adapter.codecs]


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("client", "codec"), CASES, ids=[f"{c}-{z}" for c, z in CASES])
def test_produce_and_read_back(
    module_broker: BrokerProcess, request: pytest.FixtureRequest, client: str, codec: str
) -> None:
    if client == "java":
        request.getfixturevalue("java_harness")
    adapter = ADAPTERS[client]
    bootstrap = module_broker.bootstrap
    workload = Workload(topic=f"interop-{client}-{codec}", count=RECORDS)

    adapter.create_topic(bootstrap, workload.topic, PARTITIONS)
    adapter.produce(bootstrap, workload, codec)
    records = adapter.consume_assign(bootstrap, workload.topic, PARTITIONS, RECORDS)

    check_consumed(workload, records, PARTITIONS)
