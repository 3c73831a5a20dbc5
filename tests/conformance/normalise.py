"""Response normalisation for the differential suite: what is compared, and what is not.

A decoded response becomes a plain tree (dicts of field name -> value, lists, scalars), then
these rules apply, by field name, at any depth (docs/conformance.md lists them with reasons):

- `throttle_time_ms`: dropped (quota state, not group semantics).
- member ids (`member_id` at any depth, `leader` of a classic JoinGroup, `assignor_member_id`,
  and the string lists named `members`): the broker generates them (`clientId-UUID` in Kafka's `ClassicGroup.generateMemberId`),
  so each distinct value becomes `member-N` in the order it first appears in the scenario's
  transcript; "" stays "". The same mapping holds for the whole scenario, so a member named in
  one response is recognised in the next.
- topic ids (`topic_id`): random per broker; the id of a topic the scenario created becomes
  `topic:<its name>`, any other `topic-N` in order of appearance (the zero UUID stays zero).
- producer ids (`producer_id`, `ongoing_txn_producer_id`): allocated by the broker's producer
  id manager (blocks from the controller in Kafka); each becomes `producer-N` in order of
  appearance (-1 stays). Producer epochs are compared as they are.
- node identity (`node_id`, `leader_id` of a partition leader, `host`, `port`,
  `coordinator_node_id`): become `<node>`, `<host>`, `<port>` when they name a broker (-1 stays).
- `error_message`: Kafka's free text; compared as present (`<message>`) or null.
- `cluster_id`: `<cluster>`.
- timestamps (`*_timestamp`, `transaction_start_time_ms`, `log_append_time_ms`): `<time>` when
  set (>= 0), kept when -1.
- KIP-848/KIP-932 epochs (`member_epoch`, `group_epoch`, `assignment_epoch`): kept as an
  offset from the first positive epoch the scenario sees (`epoch+0`, `epoch+1`, ...); 0, -1 and
  -2 (join, leave, static leave) stay as they are. Kafka 4.3+ starts a new group at epoch 1
  (`ModernGroup`'s constructor, KAFKA-20268), so its first join answers 2 where groupcoord
  answers 1; the offsets keep every bump and gap comparable, and one strict xfail scenario
  compares the raw values. A scenario with a classic member in a consumer group adds
  `generation_id` (the member epoch, `classicGroupJoinToConsumerGroup`) to these fields.
- `records` (fetched record batches): decoded to (offset, key, value) per record, because the
  batch header carries the broker's partition leader epoch and, for transactional data,
  control batches whose timestamps are the broker's clock.
- every array is compared as a multiset (sorted by its normalised elements): Kafka builds
  most arrays from hash maps, so its order is not part of the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.logformat.batch import decode_records, iter_batches
from groupcoord.wire.messages import WireStruct
from groupcoord.wire.primitives import UUID_ZERO

Tree = Any  # dict[str, Tree] | list[Tree] | scalar: a normalised response

DROPPED = frozenset({"throttle_time_ms"})
MEMBER_ID_FIELDS = frozenset({"member_id", "leader", "assignor_member_id"})
NODE_FIELDS = frozenset({"node_id", "coordinator_node_id", "leader_id"})
TIME_FIELDS = frozenset({"transaction_start_time_ms", "log_append_time_ms", "commit_timestamp",
                         "last_timestamp", "timestamp", "expiration_timestamp_ms"})
PRODUCER_ID_FIELDS = frozenset({"producer_id", "ongoing_txn_producer_id"})
EPOCH_FIELDS = frozenset({"member_epoch", "group_epoch", "assignment_epoch"})


class Symbols:
    """Maps broker-generated values to stable names, per kind, in order of appearance."""

    def __init__(self) -> None:
        self.names: dict[tuple[str, object], str] = {}
        self.counts: dict[str, int] = {}
        self.first_epoch: int | None = None
        # A classic member of a consumer group is told its member epoch as its generation;
        # scenarios that have one add "generation_id" here.
        self.epoch_fields: set[str] = set(EPOCH_FIELDS)

    def bind(self, kind: str, value: object, name: str) -> None:
        """Name `value` up front (a topic the scenario created), whatever order it shows in."""
        self.names[(kind, value)] = name

    def epoch(self, value: int) -> str:
        """`epoch+k`: `value` relative to the first positive epoch of the scenario."""
        if self.first_epoch is None:
            self.first_epoch = value
        return f"epoch{value - self.first_epoch:+d}"

    def name(self, kind: str, value: object) -> str:
        key = (kind, value)
        if key not in self.names:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.names[key] = f"{kind}-{self.counts[kind]}"
        return self.names[key]


def _member_id(symbols: Symbols, value: Any) -> Any:
    return symbols.name("member", value) if isinstance(value, str) and value else value


def _topic_id(symbols: Symbols, value: Any) -> Any:
    if isinstance(value, bytes) and value != UUID_ZERO:
        return symbols.name("topic", value)
    return value


def _epoch(symbols: Symbols, value: Any) -> Any:
    return symbols.epoch(value) if isinstance(value, int) and value > 0 else value


def _node(value: Any) -> Any:
    return "<node>" if isinstance(value, int) and value >= 0 else value


def _records(value: Any) -> Any:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return value
    out = []
    for header, batch in iter_batches(bytes(value)):
        kind = "control" if header.attributes & 0x20 else "data"
        for rec in decode_records(batch):
            out.append((kind, header.base_offset + rec.offset_delta, rec.key, rec.value))
    return out


def _field_rule(name: str, symbols: Symbols) -> Callable[[Symbols, Any], Any] | None:
    if name in MEMBER_ID_FIELDS:
        return _member_id
    if name == "topic_id":
        return _topic_id
    if name in PRODUCER_ID_FIELDS:
        return lambda s, v: s.name("producer", v) if isinstance(v, int) and v >= 0 else v
    if name in symbols.epoch_fields:
        return _epoch
    if name in NODE_FIELDS:
        return lambda _s, v: _node(v)
    if name == "host":
        return lambda _s, v: "<host>" if v else v
    if name == "port":
        return lambda _s, v: "<port>" if isinstance(v, int) and v > 0 else v
    if name == "error_message":
        return lambda _s, v: None if v is None else "<message>"
    if name == "cluster_id":
        return lambda _s, v: "<cluster>" if v else v
    if name in TIME_FIELDS:
        return lambda _s, v: "<time>" if isinstance(v, int) and v >= 0 else v
    if name == "records":
        return lambda _s, v: _records(v)
    return None


def normalise(value: Any, symbols: Symbols) -> Tree:
    """The comparable tree of a decoded response (or any part of one)."""
    if isinstance(value, WireStruct):
        tree: dict[str, Tree] = {}
        for field in value._FIELDS:
            if field in DROPPED:
                continue
            raw = getattr(value, field)
            rule = _field_rule(field, symbols)
            if rule is not None and not isinstance(raw, (list, WireStruct)):
                tree[field] = rule(symbols, raw)
            elif field == "members" and isinstance(raw, list) and raw and \
                    isinstance(raw[0], str):
                tree[field] = sorted(str(_member_id(symbols, m)) for m in raw)
            else:
                tree[field] = normalise(raw, symbols)
        return tree
    if isinstance(value, dict):
        return {key: normalise(item, symbols) for key, item in value.items()}
    if isinstance(value, list):
        items = [normalise(item, symbols) for item in value]
        return sorted(items, key=repr)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
