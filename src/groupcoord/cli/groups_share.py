"""`groupcoord groups reset-offsets` and `delete-offsets` on a share group, as
`kafka-share-groups.sh --reset-offsets` / `--delete-offsets` (ShareGroupCommand) do them.

- reset-offsets: the group must be Empty (or Dead), else "Share group 'g' is not empty.";
  a group that does not exist yet is reset all the same (AlterShareGroupOffsets creates
  it, KAFKA-19662), which is how `--from-file` initialises a new share group's offsets
  (KIP-1323). Scenarios as kafka-share-groups.sh 4.4: --to-earliest, --to-latest,
  --to-datetime, --to-offset, --to-current (the start offset, else the log end) and
  --from-file (`reset_plan`); no --shift-by. --all-topics means the share-partitions the
  group has offsets for (DescribeShareGroupOffsets); without --execute it is a dry run;
  --export prints the plan as CSV. The new start offsets go in one AlterShareGroupOffsets.
- delete-offsets: whole topics only (a share group's state is deleted per topic), one
  DeleteShareGroupOffsets; a TOPIC/STATUS table with "Successful" or "Error: <message>".
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from groupcoord.cli import group_ops as ops
from groupcoord.cli import reset_plan
from groupcoord.cli import share_group_ops as share_ops
from groupcoord.cli.wire_client import KafkaError, WireClient
from groupcoord.wire.errors import ErrorCode

TopicPartition = tuple[str, int]


def cmd_reset(client: WireClient, args: argparse.Namespace,
              resolve: Any, table: Any) -> int:
    if args.shift_by is not None:
        raise SystemExit("Error: share groups cannot be reset --shift-by.")
    _ensure_inactive(client, args.group)
    if args.from_file is not None:
        partitions = []
    elif args.all_topics:
        partitions = sorted((r["topic"], r["partition"])
                            for r in share_ops.share_offsets(client, args.group))
    else:
        partitions = resolve(client, args.topic)
    targets = _targets(client, args, partitions)
    errors: dict[TopicPartition, int] = {}
    if args.execute and targets:
        errors = {tp: c for tp, c in share_ops.alter_share_offsets(
            client, args.group, targets).items() if c}
    elif not args.execute and not args.dry_run:
        sys.stderr.write("WARN: No action will be performed as the --execute option is "
                         "missing.\n")
    if args.export:
        sys.stdout.write(reset_plan.export_csv(targets))
        return 1 if errors else 0
    rows = [{"group": args.group, "topic": t, "partition": p, "new_offset": o,
             "error": ErrorCode(errors[(t, p)]).name if (t, p) in errors else None}
            for (t, p), o in sorted(targets.items())]
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"] + (["ERROR"] if errors else []),
              [[r["group"], r["topic"], r["partition"], r["new_offset"]]
               + ([r["error"] or "-"] if errors else []) for r in rows])
    return 1 if errors else 0


def _ensure_inactive(client: WireClient, group: str) -> None:
    """ShareGroupService.resetOffsets: a described group must be Empty or Dead; one that
    does not exist (GroupIdNotFoundException) is reset anyway."""
    try:
        state = share_ops.describe_share_group(client, group)["state"]
    except KafkaError as exc:
        if exc.code == ErrorCode.GROUP_ID_NOT_FOUND:
            return
        raise
    if state not in ("Empty", "Dead"):
        raise SystemExit(f"Error: Share group '{group}' is not empty.")


def _targets(client: WireClient, args: argparse.Namespace,
             partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """`GroupOffsetsResetter`'s scenarios for a share group (`prepareOffsetsToReset`)."""
    targets = reset_plan.shared_targets(client, args, partitions)
    if targets is not None:
        return targets
    if args.to_offset is not None:
        return reset_plan.offsets_in_range(client, dict.fromkeys(partitions, args.to_offset))
    latest = ops.list_offsets(client, partitions, ops.LATEST)
    if args.to_latest:
        return latest
    if args.to_current:  # `resetToCurrentForShareGroup`
        started = {(r["topic"], r["partition"]): r["start_offset"]
                   for r in share_ops.share_offsets(client, args.group)
                   if r["start_offset"] is not None}
        return {tp: started.get(tp, latest[tp]) for tp in partitions}
    return reset_plan.offsets_at_datetime(client, partitions, args.to_datetime, latest)


def cmd_delete_offsets(client: WireClient, args: argparse.Namespace) -> int:
    if any(":" in spec for spec in args.topic):
        raise SystemExit("Error: share group offsets are deleted per topic; "
                         "give --topic TOPIC without partitions.")
    topics = sorted(set(args.topic))
    results = share_ops.delete_share_offsets(client, args.group, topics)
    rows = []
    for topic in topics:
        code, message = results.get(topic, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
        status = "Successful" if code == 0 else \
            f"Error: {message or ErrorCode(code).name}"
        rows.append({"topic": topic, "status": status,
                     "error": None if code == 0 else ErrorCode(code).name})
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        width = max([15] + [len(t) for t in topics])
        print(f"{'TOPIC'.ljust(width)} STATUS")
        for row in rows:
            print(f"{row['topic'].ljust(width)} {row['status']}")
    return 0 if all(r["error"] is None for r in rows) else 1
