"""`groupcoord groups`: list, describe, delete, offsets, reset-offsets, delete-offsets.

Output follows Kafka's `kafka-consumer-groups.sh` (same columns, "-" for absent values) as a
table by default, or JSON with `--json` for scripts; share groups are described as
`kafka-share-groups.sh` does (start offset, lag, in-flight records), and their offsets
are reset or deleted with AlterShareGroupOffsets / DeleteShareGroupOffsets (`groups_share`);
streams groups show their members' tasks and the lag of each active task's input
partitions (`streams_group_ops`). Talks to the broker over the wire only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from groupcoord.cli import action_options, groups_args, reset_plan
from groupcoord.cli import group_ops as ops
from groupcoord.cli import groups_share as share_cmds
from groupcoord.cli import share_dlq_ops as share_dlq
from groupcoord.cli import share_group_ops as share_ops
from groupcoord.cli import streams_group_ops as streams_ops
from groupcoord.cli.main import UsageError
from groupcoord.cli.wire_client import KafkaError, WireClient
from groupcoord.wire.errors import ErrorCode

OFFSET_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID"]
SHARE_OFFSET_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "IN-FLIGHT"]


class GroupNotFound(Exception):
    """The group does not exist (GROUP_ID_NOT_FOUND, or not listed by ListGroups)."""

    def __init__(self, group: str) -> None:
        super().__init__(group)
        self.group = group


def main(argv: Sequence[str]) -> int:
    parser, commands = _parser()
    line = groups_args.subcommand_form(list(argv))
    action_options.check_subcommand(line, commands, ["--bootstrap-server"],
                                    parser.prog, groups_args.ACTIONS)
    args = parser.parse_args(line)
    groups_args.resolve_groups(args)
    try:
        with WireClient(args.bootstrap_server) as client:
            return int(args.run(client, args) or 0)
    except GroupNotFound as exc:
        # Kafka 4.4's tool, word for word (it exits 0 after it; this exits 1).
        sys.stderr.write("Error: Executing consumer group command failed due to "
                         "org.apache.kafka.common.errors.GroupIdNotFoundException: "
                         f"Group {exc.group} not found.\n")
        return 1
    except KafkaError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"Error: cannot reach {args.bootstrap_server}: {exc}\n")
        return 1


def _parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="groupcoord groups", description=__doc__,
        epilog="kafka-consumer-groups.sh's form works too: --describe --group G --members, "
               "--list, --delete --all-groups, --reset-offsets --group G ...")
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092",
                        help="HOST:PORT of the broker (default: 127.0.0.1:9092)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(json_documents=None)  # `cmd_describe` collects several groups' JSON
    # --bootstrap-server and --json are accepted before or after the subcommand, as
    # scripts (and kafka-consumer-groups.sh users) write them either way.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", default=argparse.SUPPRESS, metavar="HOST:PORT")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, parents=[common])

    p = add("list", "list groups")
    p.add_argument("--state", action="append", default=[], help="filter (repeatable)")
    p.add_argument("--type", action="append", default=[], help="classic|consumer|share|streams")
    p.set_defaults(run=cmd_list)
    p = add("describe", "offsets and lag per partition (default), or members/state")
    groups_args.add_group_arguments(p, many=True)
    view = p.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true")
    view.add_argument("--state", action="store_true")
    view.add_argument("--offsets", action="store_true", help="the default view")
    p.add_argument("--verbose", action="store_true",
                   help="accepted as Kafka's tool takes it; members always show epochs")
    p.set_defaults(run=cmd_describe)
    p = add("offsets", "committed offsets, end offsets and lag")
    groups_args.add_group_arguments(p, many=False)
    p.set_defaults(run=cmd_offsets)
    p = add("delete", "delete empty groups")
    groups_args.add_group_arguments(p, many=True)
    p.set_defaults(run=cmd_delete)
    p = add("delete-offsets", "delete a group's committed offsets for a topic")
    groups_args.add_group_arguments(p, many=False)
    p.add_argument("--topic", action="append", required=True, help="TOPIC or TOPIC:P,P")
    p.set_defaults(run=cmd_delete_offsets)
    _reset_parser(add)
    return parser, list(sub.choices)


def _reset_parser(add: Any) -> None:
    p = add("reset-offsets", "reset inactive groups' offsets (an active one is left as it is)")
    groups_args.add_group_arguments(p, many=True)
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", help="TOPIC or TOPIC:P,P")
    scope.add_argument("--all-topics", action="store_true")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int)
    to.add_argument("--shift-by", type=int)
    to.add_argument("--to-datetime", help="ISO 8601, e.g. 2026-11-21T10:00:00+00:00")
    to.add_argument("--to-current", action="store_true",
                    help="the committed (share: start) offset, else the log end")
    to.add_argument("--from-file", metavar="CSV",
                    help="offsets from a plan: topic,partition,offset lines (or "
                         "group,topic,partition,offset), as --export writes them; the plan "
                         "names the partitions, so --topic/--all-topics are not given")
    p.add_argument("--share", action="store_true",
                   help="the group is a share group (kafka-share-groups.sh); needed only "
                        "for one that does not exist yet, which --execute creates")
    p.add_argument("--export", action="store_true",
                   help="print the new offsets as a plan (CSV) instead of a table")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true")
    mode.add_argument("--dry-run", action="store_true")
    p.set_defaults(run=cmd_reset)


def cmd_list(client: WireClient, args: argparse.Namespace) -> int:
    states = [_canonical_state(s) for s in args.state]
    rows = ops.list_groups(client, states, [t.lower() for t in args.type])
    if args.json:
        return _emit_json(rows)
    if not args.state and not args.type:
        for row in rows:
            print(row["group"])
        return 0
    columns = ["GROUP"] + (["TYPE"] if args.type else []) + (["STATE"] if args.state else [])
    _print_table(columns, [[r[c.lower()] for c in columns] for r in rows])
    return 0


def _canonical_state(state: str) -> str:
    names = {s.lower(): s for s in ("Empty", "PreparingRebalance", "CompletingRebalance",
                                    "Stable", "Dead", "Assigning", "Reconciling",
                                    "NotReady")}
    return names.get(state.lower(), state)


def _consumer_groups(client: WireClient, args: argparse.Namespace) -> list[str]:
    """The groups named, or with --all-groups every classic and consumer group (as
    `kafka-consumer-groups.sh` lists them)."""
    if not args.all_groups:
        return list(dict.fromkeys(args.groups))
    return [row["group"] for row in ops.list_groups(client, [], ["classic", "consumer"])]


def cmd_describe(client: WireClient, args: argparse.Namespace) -> int:
    names = _consumer_groups(client, args)
    # --json with several groups (or --all-groups): one document, a list of theirs.
    args.json_documents = [] if args.json and (len(names) > 1 or args.all_groups) else None
    status = 0
    for index, name in enumerate(names):
        if index and not args.json:
            print()
        args.group = name
        status = max(status, _describe_one(client, args))
    if args.json_documents is not None:
        return _emit_json(args.json_documents, status)
    return status


def _describe_json(args: argparse.Namespace, document: Any) -> int:
    """One group's description: printed, or kept for the list of several groups."""
    if args.json_documents is None:
        return _emit_json(document)
    args.json_documents.append(document)
    return 0


def _describe_one(client: WireClient, args: argparse.Namespace) -> int:
    kind = ops.group_type(client, args.group)
    if kind is None:
        raise GroupNotFound(args.group)
    if kind == "streams":
        return _describe_streams(client, args)
    share = kind == "share"
    group = (share_ops.describe_share_group(client, args.group) if share
             else ops.describe_group(client, args.group))
    if args.state:
        return _print_state(client, group, args)
    if args.members:
        if args.json:
            return _describe_json(args, group)
        if share:
            _print_share_members(group)
        elif "group_epoch" in group:
            _print_consumer_members(group)
        else:
            _print_table(["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                          "#PARTITIONS"],
                         [[group["group"], m["member_id"], m["instance_id"] or "-", m["host"],
                           m["client_id"], len(m["assignment"])] for m in group["members"]])
        return 0
    if share:
        return _print_share_offsets(client, args, group)
    return _print_offsets(client, args, group)


def _describe_streams(client: WireClient, args: argparse.Namespace) -> int:
    """A streams group: state, members with their tasks, or lag per task (default)."""
    group = streams_ops.describe_streams_group(client, args.group)
    if args.state:
        return _print_state(client, group, args)
    if args.members:
        if args.json:
            return _describe_json(args, group)
        _print_table(["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "MEMBER-EPOCH", "ACTIVE-TASKS",
                      "STANDBY-TASKS", "TARGET-ACTIVE"],
                     [[group["group"], m["member_id"], m["process_id"], m["client_id"],
                       m["member_epoch"], ",".join(m["active"]) or "-",
                       ",".join(m["standby"]) or "-", ",".join(m["target_active"]) or "-"]
                      for m in group["members"]])
        return 0
    rows = streams_ops.task_rows(client, group)
    if args.json:
        return _describe_json(args, {"group": group["group"], "type": "streams",
                                     "state": group["state"], "tasks": rows})
    keys = ["group", "task", "topic", "partition", "current_offset", "log_end_offset", "lag",
            "member_id"]
    _print_table([k.upper().replace("_", "-") for k in keys],
                 [[_dash(r[k]) for k in keys] for r in rows])
    return 0


def _print_state(client: WireClient, group: dict[str, Any],
                 args: argparse.Namespace) -> int:
    """One row: coordinator, strategy, state, epochs (consumer and share groups), members."""
    row = {"group": group["group"], "coordinator": ops.coordinator(client, group["group"]),
           "assignment_strategy":
           group["assignment_strategy"], "state": group["state"],
           "members": len(group["members"])}
    if "group_epoch" in group:
        row.update(group_epoch=group["group_epoch"], assignment_epoch=group["assignment_epoch"])
    if args.json:
        return _describe_json(args, row)
    if "group_epoch" in group:
        _print_table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                      "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"],
                     [[row["group"], row["coordinator"], row["assignment_strategy"] or "-",
                       row["state"], row["group_epoch"], row["assignment_epoch"],
                       row["members"]]])
        return 0
    _print_table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                 [[row["group"], row["coordinator"], row["assignment_strategy"] or "-",
                   row["state"], row["members"]]])
    return 0


def _partition_list(tps: list[tuple[str, int]]) -> str:
    """`other:2;topic:0,1,2` as Kafka's tools show an assignment (`getAssignmentString`:
    partitions sorted per topic, topics sorted), or "-" for none."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in tps:
        by_topic.setdefault(topic, []).append(p)
    return ";".join(sorted(f"{t}:{','.join(map(str, sorted(ps)))}"
                           for t, ps in by_topic.items())) or "-"


def _print_consumer_members(group: dict[str, Any]) -> None:
    """Members of a consumer group: epochs, reconciliation state, current vs target."""
    parts = _partition_list
    _print_table(["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "PROTOCOL",
                  "#PARTITIONS", "MEMBER-EPOCH", "TARGET-EPOCH", "STATE", "CURRENT-ASSIGNMENT",
                  "TARGET-ASSIGNMENT"],
                 [[group["group"], m["member_id"], m["instance_id"] or "-", m["host"],
                   m["client_id"], m["protocol"], len(m["assignment"]), m["member_epoch"],
                   group["assignment_epoch"], m["reconciliation"], parts(m["assignment"]),
                   parts(m["target_assignment"])] for m in group["members"]])


def _print_share_members(group: dict[str, Any]) -> None:
    """Members of a share group, as `kafka-share-groups.sh --describe --members`."""
    _print_table(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH",
                  "ASSIGNMENT"],
                 [[group["group"], m["member_id"], m["host"], m["client_id"],
                   len(m["assignment"]), m["member_epoch"], _partition_list(m["assignment"])]
                  for m in group["members"]])


def cmd_offsets(client: WireClient, args: argparse.Namespace) -> int:
    kind = ops.group_type(client, args.group)
    if kind is None:
        raise GroupNotFound(args.group)
    if kind == "share":
        return _print_share_offsets(client, args,
                                    share_ops.describe_share_group(client, args.group))
    return _print_offsets(client, args, ops.describe_group(client, args.group))


def _print_offsets(client: WireClient, args: argparse.Namespace, group: dict[str, Any]) -> int:
    rows = offset_rows(client, group)
    if args.json:
        return _describe_json(args, {"group": group["group"], "state": group["state"],
                                     "partitions": rows})
    if group["state"] in ("Empty", "Dead") and not args.json:
        print(f"\nConsumer group '{group['group']}' has no active members.\n")
    keys = ["group", "topic", "partition", "current_offset", "log_end_offset", "lag",
            "consumer_id", "host", "client_id"]
    _print_table(OFFSET_COLUMNS, [[_dash(r[k]) for k in keys] for r in rows])
    return 0


def _print_share_offsets(client: WireClient, args: argparse.Namespace,
                         group: dict[str, Any]) -> int:
    """Per share-partition: start offset, lag and in-flight records (`kafka-share-groups.sh
    --describe` columns, plus IN-FLIGHT); for a group with a dead-letter topic (KIP-1191)
    also the records ARCHIVING and the dead letters per partition, and their total."""
    dead = share_dlq.dead_letters(client, group["group"])
    rows = share_ops.offset_rows(client, group, dead.by_partition if dead else None)
    if args.json:
        return _describe_json(args, {
            "group": group["group"], "type": "share", "state": group["state"],
            "partitions": rows, "dead_letter_queue": None if dead is None else
            {"topic": dead.topic, "records": dead.total}})
    if group["state"] == "Empty":
        print(f"\nShare group '{group['group']}' has no active members.\n")
    keys = ["group", "topic", "partition", "start_offset", "lag", "in_flight"]
    columns = SHARE_OFFSET_COLUMNS
    if dead is not None:
        keys, columns = keys + ["archiving", "dead_letters"], columns + ["ARCHIVING", "DLQ"]
    _print_table(columns, [[_dash(r[k]) for k in keys] for r in rows])
    if dead is not None:
        print(f"\nDead-letter topic '{dead.topic}': {dead.total} records of this group.")
    return 0


def offset_rows(client: WireClient, group: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per partition that is assigned or has a committed offset, as Kafka's tool."""
    committed = ops.committed_offsets(client, group["group"])
    owner = {tp: m for m in group["members"] for tp in m["assignment"]}
    partitions = sorted(set(committed) | set(owner))
    ends = ops.list_offsets(client, partitions, ops.LATEST) if partitions else {}
    rows = []
    for tp in partitions:
        current, end, member = committed.get(tp), ends.get(tp), owner.get(tp)
        rows.append({
            "group": group["group"], "topic": tp[0], "partition": tp[1],
            "current_offset": current, "log_end_offset": end,
            "lag": None if current is None or end is None else max(end - current, 0),
            "consumer_id": member["member_id"] if member else None,
            "host": member["host"] if member else None,
            "client_id": member["client_id"] if member else None,
        })
    return rows


def cmd_delete(client: WireClient, args: argparse.Namespace) -> int:
    names = _consumer_groups(client, args)
    results = ops.delete_groups(client, names) if names else {}
    failed = {g: c for g, c in results.items() if c != 0}
    if args.json:
        return _emit_json({g: ErrorCode(c).name for g, c in results.items()}, 1 if failed else 0)
    ok = [g for g in names if g not in failed]
    if ok:
        quoted = ", ".join(f"'{g}'" for g in ok)
        print(f"Deletion of requested consumer groups ({quoted}) was successful.")
    if failed:
        print("Deletion of some consumer groups failed:")
        for group, code in failed.items():
            print(f"* Group '{group}' could not be deleted due to: {ErrorCode(code).name}")
    return 1 if failed else 0


def cmd_delete_offsets(client: WireClient, args: argparse.Namespace) -> int:
    if ops.group_type(client, args.group) == "share":
        return share_cmds.cmd_delete_offsets(client, args)
    partitions = _resolve_partitions(client, args.topic)
    results = ops.delete_offsets(client, args.group, partitions)
    rows = [{"topic": t, "partition": p, "status": "Successful" if c == 0 else ErrorCode(c).name}
            for (t, p), c in sorted(results.items())]
    if args.json:
        return _emit_json(rows)
    _print_table(["TOPIC", "PARTITION", "STATUS"], [[r["topic"], r["partition"], r["status"]]
                                                     for r in rows])
    return 0 if all(c == 0 for c in results.values()) else 1


def _check_reset_scope(args: argparse.Namespace) -> None:
    """`ConsumerGroupCommandOptions` / `ShareGroupCommandOptions.checkArgs`: a plan names
    its own partitions; every other reset needs --topic or --all-topics."""
    scope = "--topic" if args.topic else "--all-topics" if args.all_topics else None
    if args.from_file is not None and scope:
        raise SystemExit(f"Error: Option --from-file can't be used with option {scope}")
    if args.from_file is None and scope is None:
        raise SystemExit("Error: Option --reset-offsets takes one of these options: "
                         "--all-topics, --from-file, --topic")


def cmd_reset(client: WireClient, args: argparse.Namespace) -> int:
    """`ConsumerGroupCommand.resetOffsets`: every inactive group named (or with
    --all-groups every classic and consumer group) is reset, an active one is refused with
    an error line (exit status 1) while the others go on; a dry run unless --execute."""
    _check_reset_scope(args)
    names = _consumer_groups(client, args)
    if len(names) == 1 and not args.all_groups:
        args.group = names[0]
        if args.share or ops.group_type(client, args.group) == "share":
            return share_cmds.cmd_reset(client, args, _resolve_partitions, _print_table)
    elif args.share:
        raise UsageError("--share resets one group at a time (--group)")
    if not args.execute and not args.dry_run:
        sys.stderr.write("WARN: No action will be performed as the --execute option is missing. "
                         "In a future major release, the default behavior of this command will "
                         "be to prompt the user before executing the reset rather than doing a "
                         "dry run. You should add the --dry-run option explicitly if you are "
                         "scripting this command and want to keep the current default behavior "
                         "without prompting.\n")
    by_group: dict[str, dict[ops.TopicPartition, int]] = {}
    refused = False
    for name in names:
        refusal = ops.reset_refusal(client, name)
        if refusal is not None:
            sys.stderr.write(refusal + "\n")
            refused = True
            continue
        args.group = name
        by_group[name] = _reset_targets(client, args, _reset_partitions(client, args))
        if args.execute:
            ops.commit_offsets(client, name, by_group[name])
    status = 1 if refused else 0
    if args.export:
        # Kafka's `exportOffsetsToCsv`: the group column unless one --group was named.
        single = len(names) == 1 and not args.all_groups
        sys.stdout.write(reset_plan.export_csv(by_group.get(names[0], {})) if single
                         else reset_plan.export_groups_csv(by_group))
        return status
    rows = [{"group": g, "topic": t, "partition": p, "new_offset": o}
            for g in sorted(by_group) for (t, p), o in sorted(by_group[g].items())]
    if args.json:
        return _emit_json(rows, status)
    if by_group or not refused:
        _print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                     [[r["group"], r["topic"], r["partition"], r["new_offset"]] for r in rows])
    return status


def _reset_partitions(client: WireClient, args: argparse.Namespace
                      ) -> list[ops.TopicPartition]:
    """`getPartitionsToReset` for `args.group`: a plan names its own."""
    if args.from_file is not None:
        return []
    if args.all_topics:
        return sorted(ops.committed_offsets(client, args.group))
    return _resolve_partitions(client, args.topic)


def _reset_targets(client: WireClient, args: argparse.Namespace,
                   partitions: list[ops.TopicPartition]) -> dict[ops.TopicPartition, int]:
    """`GroupOffsetsResetter`'s reset scenarios for a consumer or classic group."""
    targets = reset_plan.shared_targets(client, args, partitions)
    if targets is not None:
        return targets
    latest = ops.list_offsets(client, partitions, ops.LATEST)
    if args.to_latest:
        return latest
    if args.to_offset is not None:
        return reset_plan.offsets_in_range(client, dict.fromkeys(partitions, args.to_offset))
    if args.shift_by is not None or args.to_current:
        current = ops.committed_offsets(client, args.group)
        if args.to_current:
            return {tp: current.get(tp, latest[tp]) for tp in partitions}
        return reset_plan.offsets_in_range(
            client, {tp: current.get(tp, latest[tp]) + args.shift_by for tp in partitions})
    return reset_plan.offsets_at_datetime(client, partitions, args.to_datetime, latest)


def _resolve_partitions(client: WireClient, specs: list[str]) -> list[ops.TopicPartition]:
    result: list[ops.TopicPartition] = []
    for spec in specs:
        topic, _, parts = spec.partition(":")
        if parts:
            result.extend((topic, int(p)) for p in parts.split(","))
        else:
            result.extend(ops.topic_partitions(client, [topic]))
    return sorted(set(result))


def _dash(value: Any) -> Any:
    return "-" if value is None else value


def _print_table(columns: list[str], rows: list[list[Any]]) -> None:
    widths = [max([len(c)] + [len(str(r[i])) for r in rows]) for i, c in enumerate(columns)]
    print(" ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in rows:
        print(" ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def _emit_json(data: Any, code: int = 0) -> int:
    print(json.dumps(data, indent=2, sort_keys=True))
    return code
