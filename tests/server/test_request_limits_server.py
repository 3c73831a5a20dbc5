"""Issue 10, must-show 4: oversized and hostile fields of every coordinator API answer a
Kafka error over a real connection and never reach a coordinator shard.

- every case of `helpers.hostile_requests` (group id, member id, instance id, protocol
  names, topics, metadata strings, transactional ids, config names) against one broker: the
  exact error code in the response, the connection still usable, no shard task created, no
  record in `__consumer_offsets`, `__share_group_state` or `__transaction_state`, no error
  logged;
- the 40,000-byte group id of the issue, then ordinary requests on the same connection;
- a fuzz test walking the JSON specs of the coordinator requests (the generator's own
  parser): for every string field of every flexible version served, a random valid request
  (hypothesis) with an oversized value in that field. The expected code comes from the
  spec, not from the implementation's table: INVALID_GROUP_ID where the spec marks the
  field `"entityType": "groupId"` (or names it GroupId), INVALID_REQUEST elsewhere.
  OffsetDelete has no flexible version, so its strings cannot exceed 32,767 bytes.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, RawClient
from helpers.hostile_requests import OVERSIZED, HostileCase, cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.apis.registry import handlers
from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import (
    add_partitions_to_txn,
    describe_share_group_offsets,
    init_producer_id,
)
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)
from groupcoord.wire.generated.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from groupcoord.wire.messages import WireStruct

_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "tests" / "wire"))
sys.path.insert(0, str(_ROOT / "tools"))
import gen_messages
from gen_spec import FieldSpec, StructSpec, load_json, snake
from wire_strategies import Case, all_cases, instance, struct_class

INTERNAL_TOPICS = ("__consumer_offsets", "__share_group_state", "__transaction_state")
COORDINATOR_API_KEYS = (8, 9, 10, 11, 12, 13, 14, 15, 16, 22, 24, 25, 26, 28, 42, 44, 47,
                        68, 69, 76, 77, 78, 79, 84, 90, 91, 92)


class ErrorLog(logging.Handler):
    """Every ERROR the broker logs (a shard failure, a failed handler or encoder)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


class BrokerThread:
    """An in-process broker on its own event loop thread, driven synchronously (hypothesis
    examples are plain functions)."""

    def __init__(self, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.inproc = InProcBroker(data_dir)
        self.run(self.inproc.__aenter__())
        self.client: RawClient = self.run(self.inproc.client())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def call(self, request: Any, version: int) -> Any:
        response_cls = handlers()[request.API_KEY].response_cls
        return self.run(self.client.call(request, version, response_cls))

    def untouched(self) -> bool:
        """No coordinator shard loaded, no share partition, no internal record written."""
        async def check() -> bool:
            broker = self.inproc.broker
            ends = []
            for name in INTERNAL_TOPICS:
                info = broker.topics.get(name)
                for partition in range(info.num_partitions if info else 0):
                    plog = broker.topics.log(name, partition)
                    ends.append(plog.log_end_offset if plog is not None else 0)
            return not broker.groups.shards and not broker.shares.partitions and not any(ends)
        result: bool = self.run(check())
        return result

    def close(self) -> None:
        self.run(self.inproc.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def errors() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    logger = logging.getLogger("groupcoord")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, errors: ErrorLog) -> Iterator[BrokerThread]:
    running = BrokerThread(tmp_path_factory.mktemp("limits"))
    yield running
    running.close()


def error_codes(message: WireStruct) -> set[int]:
    """Every error code anywhere in a response."""
    codes: set[int] = set()
    for name in message._FIELDS:
        value = getattr(message, name)
        if name.endswith("error_code"):
            codes.add(value)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, WireStruct):
                codes |= error_codes(item)
    return codes


def assert_answered(response: WireStruct, code: int) -> None:
    codes = error_codes(response)
    assert code in codes and codes <= {0, code}, codes


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_every_coordinator_api_answers_oversized_fields(
        broker: BrokerThread, errors: ErrorLog, case: HostileCase) -> None:
    response = broker.call(case.build(OVERSIZED), case.version)
    assert_answered(response, case.code)
    assert broker.untouched()
    assert errors.messages == []


SHARE_V0_CASES = [c for c in cases() if c.api in (
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge")]


@pytest.mark.parametrize("case", SHARE_V0_CASES, ids=lambda c: c.id.replace("-v1", "-v0"))
def test_share_apis_v0_answer_oversized_fields(
        broker: BrokerThread, errors: ErrorLog, case: HostileCase) -> None:
    """v0 of the share APIs (3.9 early access) is decoded by hand-written codecs into the
    same classes, so the same check applies."""
    built = case.build(OVERSIZED)
    served = handlers()[built.API_KEY].request_cls
    request = served(**{name: getattr(built, name) for name in built._FIELDS})
    assert_answered(broker.call(request, 0), case.code)
    assert broker.untouched()
    assert errors.messages == []


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_longest_accepted_fields_fit_the_coordinator(tmp_path: Path, case: HostileCase) -> None:
    """The limit is what the records hold: 32,767-byte values (ASCII and 3-byte UTF-8) go
    through the coordinator, its records and the log without failing a shard."""
    response_cls = handlers()[case.build("x").API_KEY].response_cls

    async def scenario() -> None:
        for n, value in enumerate(("x" * 32_767, "\u20ac" * 10_922)):
            async with InProcBroker(tmp_path / str(n)) as running:
                running.broker.topics.create("t", 1, {})
                client = await running.client()
                response = await client.call(case.build(value), case.version, response_cls)
                assert E.UNKNOWN_SERVER_ERROR not in error_codes(response)

    errors = ErrorLog()
    logging.getLogger("groupcoord").addHandler(errors)
    try:
        asyncio.run(scenario())
    finally:
        logging.getLogger("groupcoord").removeHandler(errors)
    assert errors.messages == []


def test_oversized_group_id_of_the_issue_then_the_connection_serves(tmp_path: Path) -> None:
    def commit(group_id: str) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
            topics=[OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=42)])])

    def join(group_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id="", protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 1, {})
            client = await running.client()
            for _ in range(3):  # every attempt answered the same, none reloads a shard
                refused = await client.call(commit(OVERSIZED), 9, OffsetCommitResponse)
                assert error_codes(refused) == {E.INVALID_GROUP_ID}
                joined = await client.call(join(OVERSIZED), 9, JoinGroupResponse)
                assert joined.error_code == E.INVALID_GROUP_ID
            assert not running.broker.groups.shards
            committed = await client.call(commit("g"), 9, OffsetCommitResponse)
            assert error_codes(committed) == {0}
            fetched = await client.call(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
                group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0])])
            ]), 9, OffsetFetchResponse)
            assert fetched.groups[0].topics[0].partitions[0].committed_offset == 42
            first = await client.call(join("g"), 9, JoinGroupResponse)
            assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id

    errors = ErrorLog()
    logging.getLogger("groupcoord").addHandler(errors)
    try:
        asyncio.run(scenario())
    finally:
        logging.getLogger("groupcoord").removeHandler(errors)
    assert errors.messages == []


def test_writes_over_max_message_bytes_fail_only_their_operation(tmp_path: Path) -> None:
    """Fields within the string limit can still add up to a batch `__consumer_offsets`
    refuses (max.message.bytes, 1,048,588): Kafka fails that write with
    RecordTooLargeException, answered UNKNOWN_SERVER_ERROR; the shard keeps serving."""
    many_topics = ["t" * 30_000 + str(i) for i in range(40)]  # 1.2 MB of topic names

    def heartbeat(topics: list[str], member_id: str, epoch: int) -> Any:
        return ConsumerGroupHeartbeatRequest(
            group_id="cg", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=5_000,
            subscribed_topic_names=topics, topic_partitions=[])

    def join(member_id: str, metadata: bytes) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            member_id=member_id, protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=metadata)])

    def sync(member_id: str, generation: int) -> SyncGroupRequest:
        return SyncGroupRequest(
            group_id="classic", generation_id=generation, member_id=member_id,
            protocol_type="consumer", protocol_name="range",
            assignments=[SyncGroupRequestAssignment(member_id=member_id, assignment=b"a")])

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 1, {})
            client = await running.client()
            refused = await client.call(heartbeat(many_topics, "m" * 22, 0), 1,
                                        ConsumerGroupHeartbeatResponse)
            assert refused.error_code == E.UNKNOWN_SERVER_ERROR
            joined = await client.call(heartbeat(["t"], "m" * 22, 0), 1,
                                       ConsumerGroupHeartbeatResponse)
            assert (joined.error_code, joined.member_epoch) == (0, 1)

            first = await client.call(join("", b"\x00" * 2_000_000), 9, JoinGroupResponse)
            member = first.member_id
            big = await client.call(join(member, b"\x00" * 2_000_000), 9, JoinGroupResponse)
            assert big.error_code == 0
            synced = await client.call(sync(member, big.generation_id), 5, SyncGroupResponse)
            assert synced.error_code == E.UNKNOWN_SERVER_ERROR
            # The member rejoins with a subscription the log can hold, and the group forms.
            small = await client.call(join(member, b"\x00" * 16), 9, JoinGroupResponse)
            assert small.error_code == 0 and small.generation_id > big.generation_id
            synced = await client.call(sync(member, small.generation_id), 5, SyncGroupResponse)
            assert (synced.error_code, synced.assignment) == (0, b"a")

    errors = ErrorLog()
    logging.getLogger("groupcoord").addHandler(errors)
    try:
        asyncio.run(scenario())
    finally:
        logging.getLogger("groupcoord").removeHandler(errors)
    assert errors.messages == []  # no shard failed, none reloaded


def test_transaction_state_over_max_message_bytes_changes_nothing(tmp_path: Path) -> None:
    """A transaction whose `__transaction_state` record would exceed the partition's
    max.message.bytes: UNKNOWN_SERVER_ERROR (Kafka's TransactionStateManager mapping of
    MESSAGE_TOO_LARGE), the transaction unchanged and still usable."""
    m = add_partitions_to_txn

    def add(pid: int, epoch: int, partitions: list[int]) -> Any:
        return m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[m.AddPartitionsToTxnTopic(name="t", partitions=partitions)])

    def codes(response: Any) -> set[int]:
        return {p.partition_error_code for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition}

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            running.broker.topics.create("t", 400, {})
            running.broker.topics.set_configs("__transaction_state", {"max.message.bytes": "1000"})
            client = await running.client()
            init = await client.call(init_producer_id.InitProducerIdRequest(
                transactional_id="tx", transaction_timeout_ms=60_000, producer_id=-1,
                producer_epoch=-1), 4, init_producer_id.InitProducerIdResponse)
            assert init.error_code == 0
            pid, epoch = init.producer_id, init.producer_epoch
            refused = await client.call(add(pid, epoch, list(range(400))), 3,
                                        m.AddPartitionsToTxnResponse)
            assert codes(refused) == {E.UNKNOWN_SERVER_ERROR}
            added = await client.call(add(pid, epoch, [0]), 3, m.AddPartitionsToTxnResponse)
            assert codes(added) == {0}

    errors = ErrorLog()
    logging.getLogger("groupcoord").addHandler(errors)
    try:
        asyncio.run(scenario())
    finally:
        logging.getLogger("groupcoord").removeHandler(errors)
    assert errors.messages == []


def test_all_share_offsets_of_a_group_without_state_metadata_answer(tmp_path: Path) -> None:
    """Found by fuzzing: null topics for a group with no ShareGroupStatePartitionMetadata
    used to park the reply forever (a None read result means "parked" to the runtime)."""
    m = describe_share_group_offsets

    async def scenario() -> None:
        async with InProcBroker(tmp_path) as running:
            client = await running.client()
            for version in (0, 1):
                response = await client.call(m.DescribeShareGroupOffsetsRequest(groups=[
                    m.DescribeShareGroupOffsetsRequestGroup(group_id="never-seen",
                                                            topics=None)]),
                    version, m.DescribeShareGroupOffsetsResponse)
                assert [(g.group_id, g.error_code, g.topics) for g in response.groups] == [
                    ("never-seen", 0, [])]

    asyncio.run(scenario())


# -- the fuzz test, driven by the JSON specs ------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A string field (dotted attribute path) of a coordinator request, and its versions."""

    case: Case
    path: tuple[FieldSpec, ...]
    versions: tuple[int, ...]
    code: int

    @property
    def id(self) -> str:
        return f"{self.case.spec.name}.{'.'.join(f.attr for f in self.path)}"


def _group_id_paths(spec_name: str) -> set[tuple[str, ...]]:
    """Paths (snake_case) the raw spec marks as group ids."""
    raw = load_json(gen_messages.SPEC_DIR / "messages" / f"{spec_name}.json")
    found: set[tuple[str, ...]] = set()

    def walk(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> None:
        for field in fields:
            path = (*prefix, snake(field["name"]))
            if field.get("entityType") == "groupId" or field["name"] == "GroupId":
                found.add(path)
            walk(field.get("fields", []), path)
    walk(raw["fields"], ())
    return found


def _string_paths(struct: StructSpec, version: int,
                  prefix: tuple[FieldSpec, ...] = ()) -> Iterator[tuple[FieldSpec, ...]]:
    for field in struct.fields:
        if version not in field.versions:
            continue
        path = (*prefix, field)
        if field.type == "string" or (field.is_array and field.elem == "string"):
            yield path
        elif field.struct is not None:
            yield from _string_paths(field.struct, version, path)


def fuzz_targets() -> list[Target]:
    table = handlers()
    targets: dict[tuple[str, tuple[str, ...]], tuple[Case, tuple[FieldSpec, ...], list[int]]] = {}
    for case in all_cases():
        spec = case.spec
        if spec.kind != "request" or spec.api_key not in COORDINATOR_API_KEYS:
            continue
        served = table[spec.api_key]
        for version in range(served.min_version, served.max_version + 1):
            # Share API v0 (3.9 early access) is hand-coded outside the 4.3 specs.
            if not served.is_flexible(version) or version not in spec.valid:
                continue
            for path in _string_paths(spec.root, version):
                key = (spec.name, tuple(f.attr for f in path))
                targets.setdefault(key, (case, path, []))[2].append(version)
    result = []
    for (name, attrs), (case, path, versions) in sorted(targets.items(), key=lambda kv: kv[0]):
        code = E.INVALID_GROUP_ID if attrs in _group_id_paths(name) else E.INVALID_REQUEST
        result.append(Target(case, path, tuple(versions), int(code)))
    return result


#: Oversized values: one to four UTF-8 bytes per character, just over or far over the limit.
OVERSIZED_TEXT = st.builds(
    lambda char, extra: char * (32_767 // len(char.encode()) + 1 + extra),
    st.sampled_from(["g", "\x00", "\u00e9", "\u20ac", "\U0001F600"]),
    st.integers(0, 20_000))


def _put(owner: type, message: Any, path: tuple[FieldSpec, ...], value: str) -> None:
    """Set the field at `path` to `value`, adding an element to empty arrays on the way."""
    field, rest = path[0], path[1:]
    current = getattr(message, field.attr)
    if not rest:
        if field.is_array:
            setattr(message, field.attr, [*(current or []), value])
        else:
            setattr(message, field.attr, value)
        return
    assert field.struct is not None
    element_cls = struct_class(owner, field.struct)
    if field.is_array:
        if not current:
            current = [element_cls()]
            setattr(message, field.attr, current)
        _put(owner, current[-1], rest, value)
    else:
        if current is None:
            current = element_cls()
            setattr(message, field.attr, current)
        _put(owner, current, rest, value)


_ELEMENT_DEFAULTS: dict[str, Any] = {"string": "x", "uuid": bytes(16), "bool": False,
                                     "bytes": b""}


def _fill(owner: type, message: Any, struct: StructSpec, version: int) -> None:
    """Give every array of the request at least one element, so that each part of Kafka's
    error response (per group, topic, partition, key or resource) has an entry to carry
    the error code."""
    for field in struct.fields:
        if version not in field.versions:
            continue
        value = getattr(message, field.attr)
        if field.is_array:
            if not value:
                element = (struct_class(owner, field.struct)() if field.struct is not None
                           else _ELEMENT_DEFAULTS.get(field.elem, 0))
                value = [element]
                setattr(message, field.attr, value)
            if field.struct is not None:
                for element in value:
                    _fill(owner, element, field.struct, version)
        elif field.struct is not None and value is not None:
            _fill(owner, value, field.struct, version)


TARGETS = fuzz_targets()


def test_fuzz_targets_cover_every_coordinator_api() -> None:
    apis = {t.case.spec.api_key for t in TARGETS}
    # OffsetDelete (47) has no flexible version: int16 lengths bound its strings.
    assert apis == set(COORDINATOR_API_KEYS) - {47}


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.id)
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_oversized_fields_from_the_specs(broker: BrokerThread, errors: ErrorLog,
                                              target: Target, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(target.versions), label="version")
    request = data.draw(instance(target.case, version), label="request")
    _fill(target.case.cls, request, target.case.spec.root, version)
    _put(target.case.cls, request, target.path, data.draw(OVERSIZED_TEXT, label="value"))
    response = broker.call(request, version)
    assert_answered(response, target.code)
    assert broker.untouched()
    assert errors.messages == []
