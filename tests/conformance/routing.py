"""Where a scenario's requests go: one broker, or the node a client would pick in a cluster.

Against one broker every request goes to it. Against a cluster (several groupcoord nodes on
PostgreSQL) a scenario's connection sends each request where a Kafka client sends it: a
group's requests to the group's coordinator, a transaction's to its transaction coordinator,
a partition's to its leader (all looked up, unrecorded, on the bootstrap node, as a client
does with FindCoordinator and Metadata), and the rest to the bootstrap node. A DescribeConfigs
of one group's configs goes to the group's coordinator too: a scenario waiting until a config
it set is applied waits for where the group is coordinated (every node follows the stored
configs within a lease pass; Kafka's brokers within a metadata update). An admin request
naming groups or transactions of several coordinators is split per coordinator and the answers
joined, and ListGroups / ListTransactions ask every node, as the Java admin client does; the
transcript compares arrays as multisets, so the joined answer reads as one broker's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from helpers.polling import wait_for
from helpers.wire_client import Pending, WireConnection

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from groupcoord.wire.generated.add_partitions_to_txn import AddPartitionsToTxnRequest
from groupcoord.wire.generated.alter_share_group_offsets import AlterShareGroupOffsetsRequest
from groupcoord.wire.generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.wire.generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.wire.generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from groupcoord.wire.generated.delete_records import DeleteRecordsRequest
from groupcoord.wire.generated.delete_share_group_offsets import DeleteShareGroupOffsetsRequest
from groupcoord.wire.generated.describe_configs import DescribeConfigsRequest
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.wire.generated.describe_producers import DescribeProducersRequest
from groupcoord.wire.generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from groupcoord.wire.generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from groupcoord.wire.generated.end_txn import EndTxnRequest
from groupcoord.wire.generated.fetch import FetchRequest
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupcoord.wire.generated.heartbeat import HeartbeatRequest
from groupcoord.wire.generated.init_producer_id import InitProducerIdRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest
from groupcoord.wire.generated.leave_group import LeaveGroupRequest
from groupcoord.wire.generated.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.wire.generated.list_offsets import ListOffsetsRequest
from groupcoord.wire.generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupcoord.wire.generated.offset_commit import OffsetCommitRequest
from groupcoord.wire.generated.offset_delete import OffsetDeleteRequest
from groupcoord.wire.generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupcoord.wire.generated.produce import ProduceRequest
from groupcoord.wire.generated.share_acknowledge import ShareAcknowledgeRequest
from groupcoord.wire.generated.share_fetch import ShareFetchRequest
from groupcoord.wire.generated.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from groupcoord.wire.generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from groupcoord.wire.generated.streams_group_describe import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)
from groupcoord.wire.generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest
from groupcoord.wire.generated.streams_group_topology_description_update import (
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from groupcoord.wire.generated.sync_group import SyncGroupRequest
from groupcoord.wire.generated.txn_offset_commit import TxnOffsetCommitRequest
from groupcoord.wire.messages import WireStruct

GROUP_KEY = 0
TRANSACTION_KEY = 1
GROUP_RESOURCE = 32  # a ConfigResource's type
FIND_COORDINATOR_VERSION = 4  # batched keys
METADATA_VERSION = 12  # topics by name or by id
# Answers a client retries its lookup on: the coordinator or leader is being moved or loaded.
RETRIABLE_LOOKUP = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE,
                              ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                              ErrorCode.LEADER_NOT_AVAILABLE})
LOOKUP_DEADLINE_S = 20.0
LOOKUP_INTERVAL_S = 0.05

R = TypeVar("R", bound=WireStruct)
Merge = Callable[[list[WireStruct]], WireStruct]
# A partition as a request names it: (topic name or topic id, partition index).
PartitionKey = tuple[str | bytes, int]


@dataclass(frozen=True)
class Plan:
    """The requests to send, each with the port of its node, and how to join their answers
    (None: one request, its answer as it is)."""

    parts: list[tuple[int, WireStruct]]
    merge: Merge | None = None


def _answers(parts: list[WireStruct], kind: type[R]) -> list[R]:
    answers = []
    for part in parts:
        if not isinstance(part, kind):
            raise TypeError(f"expected {kind.__name__}, got {type(part).__name__}")
        answers.append(part)
    return answers


def _first_error(codes: Iterable[int]) -> int:
    return next((code for code in codes if code != ErrorCode.NONE), ErrorCode.NONE)


def _concatenated(kind: type[R], field: str) -> Merge:
    """Join answers of `kind` that are one list each (`field`), one entry per key asked."""
    def merge(parts: list[WireStruct]) -> WireStruct:
        return kind(**{field: [entry for answer in _answers(parts, kind)
                               for entry in getattr(answer, field)]})
    return merge


_join_describe_groups = _concatenated(DescribeGroupsResponse, "groups")
_join_delete_groups = _concatenated(DeleteGroupsResponse, "results")
_join_consumer_describe = _concatenated(ConsumerGroupDescribeResponse, "groups")
_join_streams_describe = _concatenated(StreamsGroupDescribeResponse, "groups")
_join_share_describe = _concatenated(ShareGroupDescribeResponse, "groups")
_join_offset_fetch = _concatenated(OffsetFetchResponse, "groups")
_join_share_offsets = _concatenated(DescribeShareGroupOffsetsResponse, "groups")
_join_describe_transactions = _concatenated(DescribeTransactionsResponse, "transaction_states")


def _join_list_groups(parts: list[WireStruct]) -> WireStruct:
    answers = _answers(parts, ListGroupsResponse)
    return ListGroupsResponse(error_code=_first_error(a.error_code for a in answers),
                              groups=[g for a in answers for g in a.groups])


def _join_list_transactions(parts: list[WireStruct]) -> WireStruct:
    answers = _answers(parts, ListTransactionsResponse)
    return ListTransactionsResponse(
        error_code=_first_error(a.error_code for a in answers),
        unknown_state_filters=answers[0].unknown_state_filters,
        transaction_states=[s for a in answers for s in a.transaction_states])


class ClusterRoutes:
    """A client's view of a cluster, from its bootstrap node: the coordinators and partition
    leaders it looked up (once each per scenario: the cluster is not changing under it)."""

    def __init__(self, host: str, bootstrap_port: int) -> None:
        self.host = host
        self.bootstrap_port = bootstrap_port
        self._lookups: WireConnection | None = None
        self._coordinators: dict[tuple[int, str], int] = {}
        self._leaders: dict[PartitionKey, int] = {}
        # The node of each share session ((group, member) -> port) and of the last fetch: a
        # request naming no partition (a session's close) goes where its session is.
        self._share_sessions: dict[tuple[str, str], int] = {}
        self._last_fetch_port = bootstrap_port

    @property
    def lookups(self) -> WireConnection:
        if self._lookups is None:
            self._lookups = WireConnection(self.host, self.bootstrap_port, client_id="routing")
        return self._lookups

    def close(self) -> None:
        if self._lookups is not None:
            self._lookups.close()

    # -- lookups ----------------------------------------------------------------------------

    def coordinator_ports(self, key_type: int, keys: Sequence[str]) -> dict[str, int]:
        """key -> port of its coordinator (the bootstrap node's where the lookup fails: an
        empty or invalid key is answered there as anywhere)."""
        missing = sorted({k for k in keys if (key_type, k) not in self._coordinators})
        if missing:
            answers: dict[str, tuple[int, int]] = {}

            def settled() -> bool:
                response = self.lookups.call(FindCoordinatorRequest(
                    key_type=key_type, coordinator_keys=missing), FIND_COORDINATOR_VERSION)
                assert isinstance(response, FindCoordinatorResponse)
                answers.update({c.key: (int(c.error_code), int(c.port))
                                for c in response.coordinators})
                return not any(code in RETRIABLE_LOOKUP for code, _ in answers.values())

            wait_for(settled, f"the coordinators of {missing}", LOOKUP_DEADLINE_S,
                     interval=LOOKUP_INTERVAL_S)
            for key, (code, port) in answers.items():
                self._coordinators[(key_type, key)] = (
                    port if code == ErrorCode.NONE else self.bootstrap_port)
        return {k: self._coordinators[(key_type, k)] for k in keys}

    def coordinator_port(self, key_type: int, key: str) -> int:
        return self.coordinator_ports(key_type, [key])[key]

    def leader_port(self, topic: str | bytes, partition: int) -> int:
        """The port of the partition's leader; the bootstrap node's for a topic or partition
        the cluster does not know (answered there as anywhere)."""
        if (topic, partition) not in self._leaders:
            self._look_up_leaders(topic)
        return self._leaders.get((topic, partition), self.bootstrap_port)

    def _look_up_leaders(self, topic: str | bytes) -> None:
        wanted = (MetadataRequestTopic(topic_id=topic) if isinstance(topic, bytes)
                  else MetadataRequestTopic(name=topic))
        found: dict[int, int] = {}

        def settled() -> bool:
            response = self.lookups.call(MetadataRequest(
                topics=[wanted], allow_auto_topic_creation=False), METADATA_VERSION)
            assert isinstance(response, MetadataResponse)
            ports = {b.node_id: b.port for b in response.brokers}
            answer = response.topics[0]
            if answer.error_code != ErrorCode.NONE:
                return answer.error_code not in RETRIABLE_LOOKUP
            found.clear()
            for p in answer.partitions:
                if p.leader_id in ports:
                    found[p.partition_index] = ports[p.leader_id]
            return len(found) == len(answer.partitions)

        wait_for(settled, f"the leaders of {topic!r}", LOOKUP_DEADLINE_S,
                 interval=LOOKUP_INTERVAL_S)
        for partition, port in found.items():
            self._leaders[(topic, partition)] = port

    def wait_known_everywhere(self, topic: str, partitions: int) -> None:
        """Until every node's Metadata lists the topic with a leader for each partition: a
        topic created on one node is known to the others at their next lease pass, and a
        group's coordinator may be any of them."""
        def known(port: int) -> bool:
            conn = WireConnection(self.host, port, client_id="routing")
            try:
                response = conn.call(MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                                     allow_auto_topic_creation=False),
                                     METADATA_VERSION)
            finally:
                conn.close()
            assert isinstance(response, MetadataResponse)
            answer = response.topics[0]
            return (answer.error_code == ErrorCode.NONE and len(answer.partitions) == partitions
                    and all(p.leader_id >= 0 for p in answer.partitions))

        for port in self.node_ports():
            wait_for(functools.partial(known, port), f"node on port {port} to know {topic}",
                     LOOKUP_DEADLINE_S, interval=LOOKUP_INTERVAL_S)

    def node_ports(self) -> list[int]:
        response = self.lookups.call(MetadataRequest(topics=[], allow_auto_topic_creation=False),
                                     METADATA_VERSION)
        assert isinstance(response, MetadataResponse)
        return sorted(b.port for b in response.brokers)

    # -- plans ------------------------------------------------------------------------------

    def _one(self, port: int, request: WireStruct) -> Plan:
        return Plan([(port, request)])

    def _group(self, group: str, request: WireStruct) -> Plan:
        return self._one(self.coordinator_port(GROUP_KEY, group), request)

    def _transaction(self, transactional_id: str, request: WireStruct) -> Plan:
        return self._one(self.coordinator_port(TRANSACTION_KEY, transactional_id), request)

    def _partitions(self, partitions: Iterable[PartitionKey], request: WireStruct) -> Plan:
        ports = {self.leader_port(topic, p) for topic, p in partitions}
        if len(ports) > 1:
            raise AssertionError(f"{type(request).__name__} names partitions led by several "
                                 "nodes; the scenario must send one per leader")
        return self._one(ports.pop() if ports else self.bootstrap_port, request)

    def _share_session(self, group: str, member: str, partitions: list[PartitionKey],
                       request: WireStruct) -> Plan:
        session = (group, member)
        if not partitions:
            return self._one(self._share_sessions.get(session, self.bootstrap_port), request)
        plan = self._partitions(partitions, request)
        self._share_sessions[session] = plan.parts[0][0]
        return plan

    def _split(self, key_type: int, keys: Sequence[str],
               build: Callable[[list[str]], WireStruct], merge: Merge,
               request: WireStruct) -> Plan:
        """One request per coordinator of `keys`, or `request` itself when they share one."""
        ports = self.coordinator_ports(key_type, keys)
        by_port: dict[int, list[str]] = {}
        for key in keys:
            by_port.setdefault(ports[key], []).append(key)
        if len(by_port) <= 1:
            return self._one(next(iter(by_port), self.bootstrap_port), request)
        return Plan([(port, build(subset)) for port, subset in by_port.items()], merge)

    def _every_node(self, request: WireStruct, merge: Merge) -> Plan:
        return Plan([(port, request) for port in self.node_ports()], merge)

    def plan(self, request: WireStruct) -> Plan:
        match request:
            case (JoinGroupRequest() | SyncGroupRequest() | HeartbeatRequest()
                  | LeaveGroupRequest() | OffsetCommitRequest() | OffsetDeleteRequest()
                  | ConsumerGroupHeartbeatRequest() | StreamsGroupHeartbeatRequest()
                  | ShareGroupHeartbeatRequest() | TxnOffsetCommitRequest()
                  | AlterShareGroupOffsetsRequest() | DeleteShareGroupOffsetsRequest()
                  | StreamsGroupTopologyDescriptionUpdateRequest()):
                return self._group(request.group_id, request)
            case OffsetFetchRequest() if request.groups:
                return self._split(GROUP_KEY, [g.group_id for g in request.groups],
                                   lambda ids: OffsetFetchRequest(
                                       groups=[g for g in request.groups if g.group_id in ids],
                                       require_stable=request.require_stable),
                                   _join_offset_fetch, request)
            case OffsetFetchRequest():
                return self._group(request.group_id, request)
            case DescribeGroupsRequest():
                return self._split(GROUP_KEY, request.groups, lambda ids: DescribeGroupsRequest(
                    groups=ids, include_authorized_operations=request.include_authorized_operations),
                    _join_describe_groups, request)
            case DeleteGroupsRequest():
                return self._split(GROUP_KEY, request.groups_names,
                                   lambda ids: DeleteGroupsRequest(groups_names=ids),
                                   _join_delete_groups, request)
            case ConsumerGroupDescribeRequest():
                return self._split(GROUP_KEY, request.group_ids,
                                   lambda ids: ConsumerGroupDescribeRequest(
                                       group_ids=ids, include_authorized_operations=(
                                           request.include_authorized_operations)),
                                   _join_consumer_describe, request)
            case StreamsGroupDescribeRequest():
                return self._split(GROUP_KEY, request.group_ids,
                                   lambda ids: StreamsGroupDescribeRequest(
                                       group_ids=ids, include_authorized_operations=(
                                           request.include_authorized_operations),
                                       include_topology_description=(
                                           request.include_topology_description)),
                                   _join_streams_describe, request)
            case ShareGroupDescribeRequest():
                return self._split(GROUP_KEY, request.group_ids,
                                   lambda ids: ShareGroupDescribeRequest(
                                       group_ids=ids, include_authorized_operations=(
                                           request.include_authorized_operations)),
                                   _join_share_describe, request)
            case DescribeShareGroupOffsetsRequest():
                return self._split(GROUP_KEY, [g.group_id for g in request.groups],
                                   lambda ids: DescribeShareGroupOffsetsRequest(
                                       groups=[g for g in request.groups if g.group_id in ids]),
                                   _join_share_offsets, request)
            case DescribeConfigsRequest() if (len(request.resources) == 1 and
                                              request.resources[0].resource_type
                                              == GROUP_RESOURCE):
                return self._group(request.resources[0].resource_name, request)
            case ListGroupsRequest():
                return self._every_node(request, _join_list_groups)
            case InitProducerIdRequest() if request.transactional_id is not None:
                return self._transaction(request.transactional_id, request)
            case AddOffsetsToTxnRequest() | EndTxnRequest():
                return self._transaction(request.transactional_id, request)
            case AddPartitionsToTxnRequest() if request.transactions:
                ids = {t.transactional_id for t in request.transactions}
                ports = set(self.coordinator_ports(TRANSACTION_KEY, sorted(ids)).values())
                if len(ports) > 1:
                    raise AssertionError("AddPartitionsToTxn names transactions of several "
                                         "coordinators; the scenario must send one per node")
                return self._one(ports.pop(), request)
            case AddPartitionsToTxnRequest():
                return self._transaction(request.v3_and_below_transactional_id, request)
            case DescribeTransactionsRequest():
                return self._split(TRANSACTION_KEY, request.transactional_ids,
                                   lambda ids: DescribeTransactionsRequest(transactional_ids=ids),
                                   _join_describe_transactions, request)
            case ListTransactionsRequest():
                return self._every_node(request, _join_list_transactions)
            case ProduceRequest():
                return self._partitions(
                    [(t.topic_id if t.name == "" else t.name, p.index)
                     for t in request.topic_data for p in t.partition_data], request)
            case FetchRequest():
                partitions: list[PartitionKey] = [
                    (t.topic_id if t.topic == "" else t.topic, p.partition)
                    for t in request.topics for p in t.partitions]
                plan = (self._partitions(partitions, request) if partitions
                        else self._one(self._last_fetch_port, request))
                self._last_fetch_port = plan.parts[0][0]
                return plan
            case ShareFetchRequest():
                return self._share_session(
                    request.group_id, request.member_id,
                    [(t.topic_id, p.partition_index) for t in request.topics
                     for p in t.partitions]
                    + [(t.topic_id, p) for t in request.forgotten_topics_data
                       for p in t.partitions], request)
            case ShareAcknowledgeRequest():
                return self._share_session(
                    request.group_id, request.member_id,
                    [(t.topic_id, p.partition_index) for t in request.topics
                     for p in t.partitions], request)
            case ListOffsetsRequest():
                return self._partitions([(t.name, p.partition_index)
                                         for t in request.topics for p in t.partitions], request)
            case DeleteRecordsRequest():
                return self._partitions([(t.name, p.partition_index)
                                         for t in request.topics for p in t.partitions], request)
            case DescribeProducersRequest():
                return self._partitions([(t.name, p) for t in request.topics
                                         for p in t.partition_indexes], request)
            case _:
                return self._one(self.bootstrap_port, request)


@dataclass(frozen=True)
class Sent:
    """A request sent and not yet answered: its parts, each on the connection it went on."""

    parts: list[tuple[WireConnection, Pending]]
    merge: Merge | None


class ClientConnection:
    """One client's connection: to the bootstrap broker alone, or, given a cluster's routes,
    one connection per node it sends to. `send` and `receive` are apart so a scenario can park
    a request (a classic JoinGroup) and go on meanwhile; answers are received in the order the
    requests were sent, as on one connection."""

    def __init__(self, host: str, port: int, client_id: str,
                 routes: ClusterRoutes | None = None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.routes = routes
        self._by_port: dict[int, WireConnection] = {
            port: WireConnection(host, port, client_id=client_id)}

    def _to(self, port: int) -> WireConnection:
        if port not in self._by_port:
            self._by_port[port] = WireConnection(self.host, port, client_id=self.client_id)
        return self._by_port[port]

    def send(self, request: WireStruct, version: int) -> Sent:
        plan = Plan([(self.port, request)]) if self.routes is None else self.routes.plan(request)
        parts = []
        for port, part in plan.parts:
            conn = self._to(port)
            parts.append((conn, conn.send(part, version)))
        return Sent(parts, plan.merge)

    def receive(self, sent: Sent) -> WireStruct:
        answers = [conn.receive(pending) for conn, pending in sent.parts]
        return answers[0] if sent.merge is None else sent.merge(answers)

    def call(self, request: WireStruct, version: int) -> WireStruct:
        return self.receive(self.send(request, version))

    def close(self) -> None:
        for conn in self._by_port.values():
            conn.close()
