"""Offset reset plans in the CSV format of `kafka-consumer-groups.sh` and
`kafka-share-groups.sh` (`--reset-offsets --from-file`, `--export`; KIP-1323 for share
groups), the range check every reset target goes through, and the reset scenarios every
group type answers alike.

Mirrors `GroupOffsetsResetter.parseResetPlan` / `resetFromFile` / `checkOffsetsRange` and
`CsvUtils`: a plan is one line per partition, either `topic,partition,offset` (one group:
the group the command names) or `group,topic,partition,offset`; which one is decided by
whether the first line reads as the three-column form. `--export` writes the three-column
form for the one group, so an exported plan can initialise another group. A requested offset
past the log end is set to the log end, one before the log start to the log start, each
with Kafka's warning.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from groupcoord.cli import group_ops as ops
from groupcoord.cli.wire_client import WireClient

TopicPartition = tuple[str, int]
# `ListOffsets` of a set of partitions at EARLIEST or LATEST.
OffsetLookup = Callable[[list[TopicPartition]], dict[TopicPartition, int]]


class ResetPlanError(ValueError):
    """A plan file that cannot be read as Kafka's CSV."""


def _no_group_row(fields: list[str]) -> tuple[TopicPartition, int]:
    """`CsvRecordNoGroup`: topic (string), partition (int), offset (long)."""
    if len(fields) != 3:
        raise ValueError(f"expected 3 columns, got {len(fields)}")
    return (fields[0], int(fields[1])), int(fields[2])


def _group_row(fields: list[str]) -> tuple[str, TopicPartition, int]:
    """`CsvRecordWithGroup`: group, topic, partition, offset."""
    if len(fields) != 4:
        raise ValueError(f"expected 4 columns, got {len(fields)}")
    return fields[0], (fields[1], int(fields[2])), int(fields[3])


def parse_reset_plan(text: str, group: str) -> dict[TopicPartition, int] | None:
    """The plan's offsets for `group`, or None when the plan names other groups only."""
    # Java's String.split drops trailing empty lines; a plan written by --export ends in one.
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    try:
        _no_group_row(lines[0].split(",")) if lines else None
        single = bool(lines)
    except ValueError:
        single = False
    plan: dict[str, dict[TopicPartition, int]] = {}
    for number, line in enumerate(lines, 1):
        fields = line.split(",")
        try:
            if single:
                tp, offset = _no_group_row(fields)
                plan.setdefault(group, {})[tp] = offset
            else:
                name, tp, offset = _group_row(fields)
                plan.setdefault(name, {})[tp] = offset
        except ValueError as exc:
            raise ResetPlanError(f"line {number} ({line!r}): {exc}") from exc
    return plan.get(group)


def read_reset_plan(path: str, group: str) -> dict[TopicPartition, int]:
    """`resetFromFile`: the plan for `group` ({} with Kafka's message when it has none)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ResetPlanError(f"cannot read {path}: {exc.strerror}") from exc
    plan = parse_reset_plan(text, group)
    if plan is None:
        sys.stderr.write(f"Error: No reset plan for group {group} found.\n")
        return {}
    return plan


def check_offsets_range(requested: Mapping[TopicPartition, int], earliest: OffsetLookup,
                        latest: OffsetLookup) -> dict[TopicPartition, int]:
    """`checkOffsetsRange`: each offset moved into [log start, log end], with a warning."""
    partitions = sorted(requested)
    if not partitions:
        return {}
    starts, ends = earliest(partitions), latest(partitions)
    result: dict[TopicPartition, int] = {}
    for tp in partitions:
        offset, (topic, partition) = requested[tp], tp
        if offset > ends[tp]:
            sys.stderr.write(f"WARN: New offset ({offset}) is higher than latest offset for "
                             f"topic partition {topic}-{partition}. Value will be set to "
                             f"{ends[tp]}.\n")
            offset = ends[tp]
        elif offset < starts[tp]:
            sys.stderr.write(f"WARN: New offset ({offset}) is lower than earliest offset for "
                             f"topic partition {topic}-{partition}. Value will be set to "
                             f"{starts[tp]}.\n")
            offset = starts[tp]
        result[tp] = offset
    return result


def export_csv(offsets: Mapping[TopicPartition, int]) -> str:
    """`exportOffsetsToCsv` for one group: `topic,partition,offset` lines."""
    return "".join(f"{t},{p},{o}\n" for (t, p), o in sorted(offsets.items()))


def export_groups_csv(by_group: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """`exportOffsetsToCsv` for several groups (--all-groups, or --group repeated):
    `group,topic,partition,offset` lines."""
    return "".join(f"{g},{t},{p},{o}\n" for g in sorted(by_group)
                   for (t, p), o in sorted(by_group[g].items()))


def offsets_in_range(client: WireClient,
                     requested: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """`check_offsets_range` against the broker's log starts and ends (ListOffsets)."""
    return check_offsets_range(requested, lambda ps: ops.list_offsets(client, ps, ops.EARLIEST),
                               lambda ps: ops.list_offsets(client, ps, ops.LATEST))


def planned_offsets(client: WireClient, path: str, group: str) -> dict[TopicPartition, int]:
    """`resetFromFile`: the plan's offsets for `group`, in range; a plan that cannot be read
    ends the command."""
    try:
        plan = read_reset_plan(path, group)
    except ResetPlanError as exc:
        raise SystemExit(f"Error: reset plan {path}: {exc}") from exc
    return offsets_in_range(client, plan)


def shared_targets(client: WireClient, args: argparse.Namespace,
                   partitions: list[TopicPartition]) -> dict[TopicPartition, int] | None:
    """`GroupOffsetsResetter`'s scenarios alike for consumer and share groups: `--from-file`,
    nothing to reset, `--to-earliest`; None for the others."""
    if args.from_file is not None:
        return planned_offsets(client, args.from_file, args.group)
    if not partitions:
        return {}
    if args.to_earliest:
        return ops.list_offsets(client, partitions, ops.EARLIEST)
    return None


def offsets_at_datetime(client: WireClient, partitions: list[TopicPartition], when: str,
                        latest: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """`--to-datetime`: each partition's first offset at or after `when`, its log end
    (`latest`) where no record is that recent."""
    ts = int(datetime.fromisoformat(when).timestamp() * 1000)
    by_time = ops.list_offsets(client, partitions, ts)
    return {tp: (o if o >= 0 else latest[tp]) for tp, o in by_time.items()}
