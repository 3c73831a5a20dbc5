"""Valid Kafka request frames and a mutator that turns them into hostile ones.

Seeds are real encodings made by kafka-python's protocol classes (a client implementation
independent of ours) for the APIs a broker meets first: ApiVersions, Metadata, Produce (with
a genuine record batch), Fetch, ListOffsets, FindCoordinator, group and offset APIs,
CreateTopics (validate-only). The `Mutator` yields wire chunks (length prefix + body) that
are valid, corrupted in the body, framed with lying or absurd length prefixes, addressed to
wrong api keys/versions, or carrying garbage tagged fields. `FieldFuzzer` makes requests
that decode but carry hostile field values. Both are seeded, so a failing run can be
replayed.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CLIENT_ID = "fuzz"
# Header v1/v2: api_key, api_version, correlation_id, then client_id (int16 length + bytes).
HEADER_FIXED = 8
HEADER_END = HEADER_FIXED + 2 + len(CLIENT_ID)
ABSURD_LENGTHS = (2**31 - 1, 2**30, 200 * 2**20, 100 * 2**20 + 1, -1, -(2**31), -4096)


@dataclass(frozen=True)
class Seed:
    """A valid request body (header + message, no length prefix)."""

    name: str
    body: bytes
    flexible: bool


def _record_batch(topic_tag: str) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=f"k{i}".encode(),
                       value=f"{topic_tag}-{i}".encode(), headers=[("h", b"x")])
    return bytes(builder.build())


def _requests(topic: str) -> list[tuple[Any, tuple[int, ...]]]:
    """(request object factory result, versions to encode it at)."""
    from kafka.protocol.admin import CreateTopicsRequest, DescribeGroupsRequest, ListGroupsRequest
    from kafka.protocol.consumer import (
        FetchRequest,
        HeartbeatRequest,
        ListOffsetsRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
    )
    from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
    from kafka.protocol.producer import ProduceRequest

    produce_topic = ProduceRequest.TopicProduceData
    fetch_topic = FetchRequest.FetchTopic
    offsets_topic = ListOffsetsRequest.ListOffsetsTopic
    commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
    return [
        (lambda: ApiVersionsRequest(client_software_name="fuzz",
                                    client_software_version="1"), (0, 1, 2, 3)),
        (lambda: MetadataRequest(topics=None), (1, 4, 8, 9, 12)),
        (lambda: ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
            produce_topic(name=topic, partition_data=[produce_topic.PartitionProduceData(
                index=0, records=_record_batch(topic))])]), (3, 7, 8, 9)),
        # max_wait_ms=0: a long-polling fetch would only slow the fuzzer down.
        (lambda: FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            fetch_topic(topic=topic, partitions=[fetch_topic.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
            forgotten_topics_data=[]), (4, 11, 12)),
        (lambda: ListOffsetsRequest(replica_id=-1, topics=[offsets_topic(name=topic, partitions=[
            offsets_topic.ListOffsetsPartition(partition_index=0, timestamp=-2)])]), (1, 5, 7)),
        (lambda: FindCoordinatorRequest(key="g", key_type=0, coordinator_keys=["g"]), (0, 3, 4)),
        (lambda: HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), (0, 4)),
        (lambda: ListGroupsRequest(), (0, 4)),
        (lambda: DescribeGroupsRequest(groups=["g"]), (0, 5)),
        (lambda: OffsetFetchRequest(group_id="g", topics=None), (2, 6, 7)),
        (lambda: OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1,
                                     member_id="", topics=[commit_topic(name=topic, partitions=[
                                         commit_topic.OffsetCommitRequestPartition(
                                             partition_index=0, committed_offset=1,
                                             committed_metadata="")])]), (2, 8)),
        (lambda: CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="fuzz-created", num_partitions=1, replication_factor=1, assignments=[],
            configs=[])], timeout_ms=1000, validate_only=True), (2, 5)),
    ]


def build_seeds(topic: str) -> list[Seed]:
    """Encode every seed request at each listed version."""
    seeds = []
    for factory, versions in _requests(topic):
        for version in versions:
            request = factory()
            request.with_header(correlation_id=version, client_id=CLIENT_ID)
            body = bytes(request.encode(version=version, header=True, framed=False))
            seeds.append(Seed(f"{type(request).__name__}v{version}", body,
                              bool(request.flexible_version_q(version))))
    return seeds


def frame(body: bytes, length: int | None = None) -> bytes:
    """Length-prefix a body; `length` lets the prefix lie."""
    return struct.pack(">i", len(body) if length is None else length) + body


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Mutator:
    """Produces one wire chunk per call, drawn from a weighted mix of mutation kinds."""

    def __init__(self, seeds: list[Seed], seed: int) -> None:
        self.seeds = seeds
        self.rng = random.Random(seed)
        self.kinds: list[tuple[Callable[[Seed], bytes], int]] = [
            (self.valid, 8), (self.bit_flips, 14), (self.splat, 10), (self.truncated_body, 8),
            (self.extended_body, 5), (self.wrong_api_key, 8), (self.wrong_version, 8),
            (self.header_tagged_garbage, 8), (self.trailing_tagged_garbage, 6),
            (self.length_lie, 7), (self.absurd_length, 4), (self.random_frame, 6),
            (self.varint_bomb, 5), (self.empty_frame, 1),
        ]
        self.funcs = [k for k, _ in self.kinds]
        self.weights = [w for _, w in self.kinds]

    def __call__(self) -> bytes:
        kind = self.rng.choices(self.funcs, self.weights)[0]
        return kind(self.rng.choice(self.seeds))

    def valid(self, seed: Seed) -> bytes:
        return frame(seed.body)

    def bit_flips(self, seed: Seed) -> bytes:
        body = bytearray(seed.body)
        for _ in range(self.rng.randint(1, 8)):
            body[self.rng.randrange(len(body))] ^= 1 << self.rng.randrange(8)
        return frame(bytes(body))

    def splat(self, seed: Seed) -> bytes:
        body = bytearray(seed.body)
        start = self.rng.randrange(len(body))
        width = self.rng.randint(1, 8)
        fill = self.rng.choice([b"\xff", b"\x00", b"\x7f", b"\x80"])
        body[start:start + width] = fill * width if self.rng.random() < 0.5 \
            else self.rng.randbytes(width)
        return frame(bytes(body))

    def truncated_body(self, seed: Seed) -> bytes:
        return frame(seed.body[: self.rng.randrange(len(seed.body))])

    def extended_body(self, seed: Seed) -> bytes:
        return frame(seed.body + self.rng.randbytes(self.rng.randint(1, 64)))

    def wrong_api_key(self, seed: Seed) -> bytes:
        key = self.rng.choice([-1, -32768, 32767, 9999, 100, self.rng.randrange(0, 120)])
        return frame(struct.pack(">h", key) + seed.body[2:])

    def wrong_version(self, seed: Seed) -> bytes:
        version = self.rng.choice([-1, -32768, 32767, 99, self.rng.randrange(0, 30)])
        return frame(seed.body[:2] + struct.pack(">h", version) + seed.body[4:])

    def _tagged_section(self) -> bytes:
        if self.rng.random() < 0.3:  # a count that promises far more than follows
            return uvarint(self.rng.choice([2**31, 2**28, 1000])) + self.rng.randbytes(4)
        fields = []
        for _ in range(self.rng.randint(1, 4)):
            data = self.rng.randbytes(self.rng.randint(0, 16))
            size = len(data) if self.rng.random() < 0.7 else self.rng.choice([2**30, 500])
            fields.append(uvarint(self.rng.randrange(0, 2**20)) + uvarint(size) + data)
        return uvarint(len(fields)) + b"".join(fields)

    def header_tagged_garbage(self, seed: Seed) -> bytes:
        if not seed.flexible:
            return self.splat(seed)
        # The flexible header's tag section is one byte (zero tags) right after client_id.
        body = seed.body[:HEADER_END] + self._tagged_section() + seed.body[HEADER_END + 1:]
        return frame(body)

    def trailing_tagged_garbage(self, seed: Seed) -> bytes:
        if not seed.flexible:
            return self.extended_body(seed)
        # A flexible message ends with its top-level tag section, empty in the seeds.
        return frame(seed.body[:-1] + self._tagged_section())

    def length_lie(self, seed: Seed) -> bytes:
        delta = self.rng.choice([-1, 1]) * self.rng.randint(1, 1000)
        return frame(seed.body, max(0, len(seed.body) + delta))

    def absurd_length(self, seed: Seed) -> bytes:
        return frame(seed.body[:16], self.rng.choice(ABSURD_LENGTHS))

    def random_frame(self, seed: Seed) -> bytes:
        return frame(self.rng.randbytes(self.rng.randint(0, 300)))

    def varint_bomb(self, seed: Seed) -> bytes:
        pos = self.rng.randrange(HEADER_FIXED, len(seed.body))
        return frame(seed.body[:pos] + b"\xff" * self.rng.randint(5, 12) + seed.body[pos:])

    def empty_frame(self, seed: Seed) -> bytes:
        return frame(b"")


class FieldFuzzer:
    """Well-structured requests with hostile field values: random or invalid topic and group
    names, out-of-range partitions, offsets, timeouts and acks, garbage record batches.

    These decode, so the broker must answer them (or, for acks=0, stay silent) instead of
    closing the connection; they exercise the request handlers rather than the decoder.
    """

    def __init__(self, topic: str, seed: int) -> None:
        self.topic = topic
        self.rng = random.Random(seed)
        self.batch = _record_batch(topic)
        self.builders = [self.metadata, self.produce, self.fetch, self.list_offsets,
                         self.find_coordinator, self.heartbeat, self.offset_commit,
                         self.offset_fetch, self.describe_groups, self.create_topics,
                         self.api_versions]
        self.correlation = 0

    def __call__(self) -> Seed:
        """One request; encoding is slow-ish, so callers build a pool and draw from it."""
        request, versions = self.rng.choice(self.builders)()
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        request.with_header(correlation_id=self.correlation, client_id=CLIENT_ID)
        version = self.rng.choice(versions)
        body = bytes(request.encode(version=version, header=True, framed=False))
        return Seed(f"{type(request).__name__}v{version}", body,
                    bool(request.flexible_version_q(version)))

    def name(self) -> str:
        rng = self.rng
        return rng.choice([
            self.topic, "", ".", "..", "../../escape", "a" * 249, "a" * 300, "no-such-topic",
            "bad name!", "\u00e9t\u00e9", "".join(rng.choice("abc._-") for _ in range(8)),
        ])

    def int32(self) -> int:
        return self.rng.choice([0, 1, -1, 7, 2**31 - 1, -(2**31), self.rng.randrange(-5, 50)])

    def int64(self) -> int:
        return self.rng.choice([0, -1, -2, -3, 2**63 - 1, -(2**63), self.rng.randrange(10**6)])

    def records(self) -> bytes | None:
        kind = self.rng.randrange(5)
        if kind == 0:
            return None
        if kind == 1:
            return self.rng.randbytes(self.rng.randint(0, 200))
        body = bytearray(self.batch)
        if kind == 2:
            body[self.rng.randrange(len(body))] ^= 0xFF
        elif kind == 3:
            del body[self.rng.randrange(len(body)):]
        return bytes(body)

    def metadata(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.metadata import MetadataRequest

        topics = None if self.rng.random() < 0.2 else [
            MetadataRequest.MetadataRequestTopic(name=self.name())
            for _ in range(self.rng.randint(0, 3))]
        # No auto-creation: thousands of junk topics would only slow the run down.
        return MetadataRequest(topics=topics, allow_auto_topic_creation=False), (1, 4, 9, 12)

    def produce(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.producer import ProduceRequest

        topic = ProduceRequest.TopicProduceData
        partition = topic.PartitionProduceData(index=self.int32(), records=self.records())
        return ProduceRequest(
            transactional_id=None, acks=self.rng.choice([0, 1, -1, 2, -2]),
            timeout_ms=self.rng.choice([0, 100, -1]),
            topic_data=[topic(name=self.name(), partition_data=[partition])]), (3, 7, 8, 9)

    def fetch(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.consumer import FetchRequest

        topic = FetchRequest.FetchTopic
        partition = topic.FetchPartition(partition=self.int32(), fetch_offset=self.int64(),
                                         partition_max_bytes=self.int32())
        # max_wait_ms stays 0: a long poll is legitimate and would only stall the fuzzer.
        return FetchRequest(max_wait_ms=0, min_bytes=self.int32(), max_bytes=self.int32(),
                            topics=[topic(topic=self.name(), partitions=[partition])],
                            forgotten_topics_data=[]), (4, 11, 12)

    def list_offsets(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.consumer import ListOffsetsRequest

        topic = ListOffsetsRequest.ListOffsetsTopic
        partition = topic.ListOffsetsPartition(partition_index=self.int32(),
                                               timestamp=self.int64())
        return ListOffsetsRequest(replica_id=self.int32(), topics=[
            topic(name=self.name(), partitions=[partition])]), (1, 5, 7)

    def find_coordinator(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.metadata import FindCoordinatorRequest

        key = self.name()
        return FindCoordinatorRequest(key=key, key_type=self.rng.choice([0, 1, 2, 9, -1]),
                                      coordinator_keys=[key]), (0, 3, 4)

    def heartbeat(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.consumer import HeartbeatRequest

        return HeartbeatRequest(group_id=self.name(), generation_id=self.int32(),
                                member_id=self.name()), (0, 4)

    def offset_commit(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.consumer import OffsetCommitRequest

        topic = OffsetCommitRequest.OffsetCommitRequestTopic
        partition = topic.OffsetCommitRequestPartition(
            partition_index=self.int32(), committed_offset=self.int64(),
            committed_metadata=self.rng.choice(["", "m" * 5000]))
        return OffsetCommitRequest(group_id=self.name(), generation_id_or_member_epoch=-1,
                                   member_id="", topics=[topic(name=self.name(),
                                                               partitions=[partition])]), (2, 8)

    def offset_fetch(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.consumer import OffsetFetchRequest

        return OffsetFetchRequest(group_id=self.name(), topics=None), (2, 6, 7)

    def describe_groups(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.admin import DescribeGroupsRequest

        return DescribeGroupsRequest(groups=[self.name() for _ in range(3)]), (0, 5)

    def create_topics(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.admin import CreateTopicsRequest

        topic = CreateTopicsRequest.CreatableTopic(
            name=self.name(), num_partitions=self.int32(),
            replication_factor=self.rng.choice([1, 0, -1, 3]), assignments=[], configs=[])
        return CreateTopicsRequest(topics=[topic], timeout_ms=self.int32(),
                                   validate_only=True), (2, 5)

    def api_versions(self) -> tuple[Any, tuple[int, ...]]:
        from kafka.protocol.metadata import ApiVersionsRequest

        return ApiVersionsRequest(client_software_name=self.name(),
                                  client_software_version=self.name()), (0, 3)
