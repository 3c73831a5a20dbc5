"""The scenario DSL: a scenario is a function of a `Conversation`, run once per broker.

A scenario sends raw requests built with our generated codec. `call`/`receive` record the
normalised response under a step label in the conversation's transcript; `setup`/`quiet`
send without recording (creating topics, producing data, polling for a state). Running the
same scenario against Apache Kafka and groupcoord gives two transcripts; they must be equal.

Everything a scenario names (groups, topics, transactional ids) goes through `name()`, which
prefixes the scenario's own name, so every scenario can share one broker of each kind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from helpers.polling import wait_for
from helpers.wire_client import WireConnection

from conformance.normalise import Symbols, Tree, normalise
from conformance.routing import ClientConnection, ClusterRoutes, Sent
from groupcoord.logformat.batch import build_batch
from groupcoord.logformat.record import SimpleRecord
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
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
from groupcoord.wire.messages import WireStruct

W = TypeVar("W", bound=WireStruct)
POLL_DEADLINE_S = 20.0
POLL_INTERVAL_S = 0.02
# One creation time for every record of the test session, so fetched records are
# byte-for-byte the same on both brokers; read from the clock because a fixed time in the
# past is past the default retention.ms (7 days): Kafka's retention pass (30 s after start,
# then every 5 min) rolls and deletes such a segment, the active one included, under the
# scenario that is running, whose records then vanish on Kafka alone.
RECORD_TIME_MS = int(time.time() * 1000)


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: bytes
    partitions: int


@dataclass
class Conversation:
    """One scenario against one broker."""

    broker: str  # "kafka" or "groupcoord", for messages only
    host: str
    port: int
    scenario: str
    # Against a cluster: where each request goes (see `routing`); None against one broker.
    routes: ClusterRoutes | None = None
    transcript: list[tuple[str, Tree]] = field(default_factory=list)
    symbols: Symbols = field(default_factory=Symbols)
    connections: list[ClientConnection] = field(default_factory=list)
    raw_connections: list[WireConnection] = field(default_factory=list)
    _default: ClientConnection | None = None

    def name(self, suffix: str) -> str:
        return f"{self.scenario}-{suffix}"

    def connect(self, client_id: str = "conformance") -> ClientConnection:
        conn = ClientConnection(self.host, self.port, client_id, self.routes)
        self.connections.append(conn)
        return conn

    def connect_raw(self, client_id: str) -> WireConnection:
        """A plain connection to the bootstrap broker, for byte-level requests (never routed)."""
        conn = WireConnection(self.host, self.port, client_id=client_id)
        self.raw_connections.append(conn)
        return conn

    @property
    def default(self) -> ClientConnection:
        if self._default is None:
            self._default = self.connect()
        return self._default

    # -- recorded steps ---------------------------------------------------------------------

    def call(self, step: str, request: WireStruct, version: int, response_type: type[W],
             conn: ClientConnection | None = None) -> W:
        """Send, wait, record the normalised response under `step`, return it decoded."""
        conn = conn or self.default
        return self.receive(step, conn, conn.send(request, version), response_type)

    def receive(self, step: str, conn: ClientConnection, sent: Sent,
                response_type: type[W]) -> W:
        response = conn.receive(sent)
        if not isinstance(response, response_type):
            raise TypeError(f"{step}: got {type(response).__name__}")
        self.record(step, response)
        return response

    def record(self, step: str, value: object) -> None:
        self.transcript.append((step, normalise(value, self.symbols)))

    def call_retrying(self, step: str, request: WireStruct, version: int,
                      response_type: type[W], retriable: frozenset[int]) -> W:
        """`call`, but first retry (unrecorded) while the answer's error_code is retriable,
        as a client does: Kafka answers COORDINATOR_LOAD_IN_PROGRESS while it loads a
        coordinator partition for the first time after start-up."""
        response: W | None = None

        def settled() -> bool:
            nonlocal response
            response = self.quiet(request, version, response_type)
            return response.error_code not in retriable  # type: ignore[attr-defined]

        self.wait_until(settled, f"{step}: a non-retriable answer")
        assert response is not None
        self.record(step, response)
        return response

    # -- unrecorded steps -------------------------------------------------------------------

    def quiet(self, request: WireStruct, version: int, response_type: type[W],
              conn: ClientConnection | None = None) -> W:
        response = (conn or self.default).call(request, version)
        if not isinstance(response, response_type):
            raise TypeError(f"got {type(response).__name__}")
        return response

    def create_topic(self, suffix: str, partitions: int = 1,
                     configs: dict[str, str] | None = None, prefix: str = "") -> Topic:
        """Create a topic (named `prefix` + `name(suffix)`) and wait until the broker's
        metadata shows all its partitions."""
        name = prefix + self.name(suffix)
        created = self.quiet(CreateTopicsRequest(topics=[CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
            timeout_ms=10_000), 7, CreateTopicsResponse)
        result = created.topics[0]
        if result.error_code != ErrorCode.NONE:
            raise AssertionError(f"{self.broker}: CreateTopics {name}: {result.error_code}")
        self.wait_until(lambda: self._has_leaders(name, partitions), f"metadata of {name}")
        if self.routes is not None:
            self.routes.wait_known_everywhere(name, partitions)
        probes = iter(range(1_000_000))
        self.wait_until(lambda: self._coordinator_sees(name, partitions, next(probes)),
                        f"the group coordinator's view of {name}")
        self.symbols.bind("topic", result.topic_id, f"topic:{suffix}")
        return Topic(name, result.topic_id, partitions)

    def _coordinator_sees(self, topic: str, partitions: int, attempt: int) -> bool:
        """Whether a probe consumer group is assigned all of `topic`'s partitions.

        Kafka's group coordinator applies a metadata image after the metadata cache that
        answers Metadata does, so a topic can be listed before a heartbeat can be assigned
        it. Each attempt is a new member of a probe group (a new member bumps the epoch and
        rehashes the topic metadata), which then leaves.
        """
        group, member = f"{topic}-probe", f"probe{attempt:017d}"
        joined = self.quiet(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=[topic], topic_partitions=[]), 1,
            ConsumerGroupHeartbeatResponse)
        self.quiet(ConsumerGroupHeartbeatRequest(group_id=group, member_id=member,
                                                 member_epoch=-1), 1,
                   ConsumerGroupHeartbeatResponse)
        if joined.error_code != ErrorCode.NONE or joined.assignment is None:
            return False
        return sum(len(tp.partitions) for tp in joined.assignment.topic_partitions) == partitions

    def _has_leaders(self, name: str, partitions: int) -> bool:
        meta = self.quiet(MetadataRequest(topics=[MetadataRequestTopic(name=name)],
                                          allow_auto_topic_creation=False), 12, MetadataResponse)
        topic = meta.topics[0]
        return topic.error_code == ErrorCode.NONE and len(topic.partitions) == partitions and \
            all(p.leader_id >= 0 for p in topic.partitions)

    def produce(self, topic: Topic, partition: int, values: list[bytes],
                transactional_id: str | None = None, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, version: int = 9,
                step: str | None = None) -> int:
        """Append one batch; returns its base offset. From v12 a transactional batch adds
        its partition to the transaction (KIP-890 part 2). With `step` the partition's
        answer is recorded under that name, an error included; without, an error fails."""
        batch = build_batch(
            [SimpleRecord(f"k{i}".encode(), v, (), RECORD_TIME_MS + i)
             for i, v in enumerate(values)],
            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
            transactional=transactional_id is not None)
        response = self.quiet(ProduceRequest(
            transactional_id=transactional_id, acks=-1, timeout_ms=10_000,
            topic_data=[TopicProduceData(name=topic.name, partition_data=[
                PartitionProduceData(index=partition, records=batch)])]), version,
            ProduceResponse)
        result = response.responses[0].partition_responses[0]
        if step is not None:
            self.record(step, result)
        elif result.error_code != ErrorCode.NONE:
            raise AssertionError(f"{self.broker}: Produce to {topic.name}: {result.error_code}")
        return int(result.base_offset)

    def describe_state(self, group: str) -> str:
        described = self.quiet(DescribeGroupsRequest(groups=[group]), 5, DescribeGroupsResponse)
        return str(described.groups[0].group_state)

    def wait_for_state(self, group: str, state: str) -> None:
        """Poll DescribeGroups until the classic group is in `state` (e.g. after a parked join)."""
        self.wait_until(lambda: self.describe_state(group) == state, f"{group} in {state}")

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        wait_for(condition, f"{self.broker}: {what}", POLL_DEADLINE_S, interval=POLL_INTERVAL_S)

    def close(self) -> None:
        for conn in self.connections:
            conn.close()
        for raw in self.raw_connections:
            raw.close()
        if self.routes is not None:
            self.routes.close()
