"""``groupcoord analyze why GROUP [--at TS]``: one group's rebalance story, in words.

Two sources, same story:

- ``--data-dir``: the log dir itself, without Spark. Only the group's own
  ``__consumer_offsets`` partition is read (Kafka's ``partitionFor``: the Java string hash of
  the group id modulo ``offsets.topic.num.partitions``, 50 unless the directories say
  otherwise; all partitions as a last resort) plus ``__group_events``, and the rebalances are
  rebuilt by the functions the pipeline runs (``membership``, ``rebalance``);
- ``--out``: the tables of an ``analyze run`` (``gold/rebalances``,
  ``silver/classic_generations``), which also carry the estimated starts of classic
  rebalances that had no group event.

Without ``--at`` every rebalance is told; with it, the rebalances within ``--window`` of that
time (at least the last one before it and the first after it), the one in progress or most
recent at that time marked with ``>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupcoord.analytics.driver.pipeline import event_dicts
from groupcoord.analytics.fixture.generate import coordinator_partition
from groupcoord.analytics.gold import rebalance
from groupcoord.analytics.read.reader import iter_raw_records
from groupcoord.analytics.read.segments import TxnResolver, list_partitions, topic_names
from groupcoord.analytics.read.splits import plan
from groupcoord.analytics.report import story
from groupcoord.analytics.silver import membership
from groupcoord.logformat.internal_topics import GROUP_EVENTS_TOPIC, OFFSETS_TOPIC

Row = dict[str, Any]
COMMIT_TYPES = (b"\x00\x00", b"\x00\x01")  # offset commit keys: not membership
OFFSETS_TOPIC_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions default


@dataclass(frozen=True)
class GroupHistory:
    """A group's rebalances (oldest first) and what the sentences need besides."""

    group: str
    rebalances: list[Row]
    timeouts: dict[tuple[str, str], int]


def raw_rows(data_dir: str, topic: str, partition: int | None) -> Iterator[Row]:
    for s in plan(data_dir, "coord_records", topic=topic):
        if partition is not None and s.partition != partition:
            continue
        txns = TxnResolver.from_list(list(s.txn_markers))
        for r in iter_raw_records(s.path, s.start, s.end, txns):
            yield {"key": r.key, "value": r.value, "record_ts_ms": r.timestamp,
                   "coord_partition": s.partition, "log_offset": r.log_offset,
                   "txn_outcome": r.txn_outcome, "topic": topic}


def _group_filter(group: str) -> str:
    import re

    return f"^{re.escape(group)}$"


def _membership(data_dir: str, partition: int | None) -> membership.MembershipTables:
    rows = [r for r in raw_rows(data_dir, OFFSETS_TOPIC, partition)
            if r["key"] is not None and r["key"][:2] not in COMMIT_TYPES]
    t = membership.build(rows, topic_names(data_dir))
    membership.normalise_epoch_rows(t)
    return t


def _has(t: membership.MembershipTables, group: str) -> bool:
    return any(r["group_id"] == group for r in t.classic_generations + t.cg_epochs)


def group_membership(data_dir: str, group: str) -> membership.MembershipTables:
    """The membership tables of the partition that holds ``group``: ``partitionFor`` with
    Kafka's default partition count, then with the count of partition directories (a broker
    may create them lazily, a fixture may have fewer); every partition if neither has it."""
    present = {p.partition for p in list_partitions(data_dir, OFFSETS_TOPIC)}
    for n in dict.fromkeys((OFFSETS_TOPIC_PARTITIONS, len(present))):
        p = coordinator_partition(group, n) if n else None
        if p in present:
            t = _membership(data_dir, p)
            if _has(t, group):
                return t
    return _membership(data_dir, None)


def from_data_dir(data_dir: str, group: str) -> GroupHistory:
    """Decode the group's membership records and events straight from the log dir."""
    t = group_membership(data_dir, group)
    events = event_dicts(list(raw_rows(data_dir, GROUP_EVENTS_TOPIC, None)), _group_filter(group))
    rebs = rebalance.classic_rebalances(t, events) + rebalance.consumer_rebalances(t, events)
    return GroupHistory(group, _sorted([r for r in rebs if r["group_id"] == group]),
                        story.session_timeouts(g for g in t.classic_generations
                                               if g["group_id"] == group))


def from_out_dir(out_dir: str, group: str) -> GroupHistory:
    """Read the group's rows from an ``analyze run`` output."""
    import pyarrow.dataset as ds

    def rows(rel: str) -> list[Row]:
        path = Path(out_dir) / rel
        if not path.exists() or not any(path.glob("*.parquet")):
            return []
        d = ds.dataset(str(path), format="parquet")
        return list(d.to_table(filter=ds.field("group_id") == group).to_pylist())

    return GroupHistory(group, _sorted(rows("gold/rebalances")),
                        story.session_timeouts(rows("silver/classic_generations")))


def _at(r: Row) -> int:
    return int(r["end_ts_ms"] if r.get("end_ts_ms") is not None else r.get("start_ts_ms") or 0)


def _sorted(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (_at(r), r["to_epoch"]))


def around(rebalances: list[Row], at_ms: int, window_ms: int) -> tuple[list[Row], Row | None]:
    """The rebalances within ``window_ms`` of ``at_ms`` plus the nearest on either side,
    and the one in progress or most recently completed at ``at_ms``."""
    def started(r: Row) -> int:
        return int(r["start_ts_ms"]) if r.get("start_ts_ms") is not None else _at(r)

    current = next((r for r in reversed(rebalances) if started(r) <= at_ms), None)
    before = [r for r in rebalances if _at(r) <= at_ms]
    after = [r for r in rebalances if _at(r) > at_ms]
    near = [r for r in rebalances if abs(_at(r) - at_ms) <= window_ms]
    chosen = {id(r) for r in near + before[-1:] + after[:1]}
    return [r for r in rebalances if id(r) in chosen], current


def tell(h: GroupHistory, at_ms: int | None = None, window_ms: int = 300_000) -> list[str]:
    """The story as lines of text."""
    if not h.rebalances:
        return [f"group {h.group}: no rebalances found"]
    kind = "classic" if h.rebalances[0]["group_type"] == "classic" else h.rebalances[0][
        "group_type"]
    head = f"group {h.group} ({kind} protocol): {story.plural(len(h.rebalances), 'rebalance')}"
    if at_ms is None:
        shown, current = h.rebalances, None
        lines = [head]
    else:
        shown, current = around(h.rebalances, at_ms, window_ms)
        lines = [(f"{head}; around {story.fmt_ts(at_ms)} UTC "
                 f"(within {story.fmt_seconds(window_ms)}):")]
    for r in shown:
        mark = "> " if r is current else "  "
        lines.append(mark + story.rebalance_line(r, h.timeouts))
        if r.get("members_after"):
            lines.append(f"      members after: {_members_after(r, h.rebalances)}")
    if current is not None and at_ms is not None:
        running = current.get("end_ts_ms") is None or current["end_ts_ms"] > at_ms
        lines.append("> = in progress at that time" if running
                     else "> = the last rebalance before that time")
    return lines


def _members_after(r: Row, history: list[Row]) -> str:
    """Members after a rebalance: the running member set replayed from joins and leaves."""
    members: set[str] = set()
    for x in history:
        members = (members | set(x.get("joined") or [])) - set(x.get("left") or [])
        if x is r:
            break
    names = sorted(story.short_member(m) for m in members)
    return ", ".join(names) if names else f"{r['members_after']} (ids unknown)"
