"""`groupcoord acls add|list|remove --bootstrap-server HOST:PORT`: ACLs of a running broker,
as `kafka-acls.sh` manages them, through CreateAcls / DescribeAcls / DeleteAcls; its form
(`--bootstrap-server B --add ...`, `--list`, `--remove`) works too.

`add` creates every combination of the principals (`--allow-principal`, `--deny-principal`),
hosts (`--allow-host`/`--deny-host`, default `*`), operations and resources given; `remove`
deletes what the same options match (an option left out matches anything); `list` shows the
ACLs of the resources given (all without one), optionally of one `--principal`. Resources:
`--topic`, `--group`, `--transactional-id` (repeatable), `--cluster`; `--resource-pattern-type`
is `literal` (default; `*` is the wildcard name) or `prefixed` (and for list/remove also `any`
or `match`). Operations use Kafka's names (`Read`, `Write`, `Describe`, `All`, ...).
Connection options (`--security-protocol`, `--sasl-*`, `--ssl-ca`) log the tool in like a
Kafka client.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from groupcoord.cli import action_options, sasl_login
from groupcoord.cli.wire_client import KafkaError, check
from groupcoord.security.acl import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    from_code,
)
from groupcoord.wire.generated.create_acls import AclCreation, CreateAclsRequest
from groupcoord.wire.generated.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from groupcoord.wire.generated.describe_acls import DescribeAclsRequest

Resource = tuple[ResourceType, str]


#: `kafka-acls.sh`'s action options and the subcommand each is.
ACTIONS = {"--add": "add", "--list": "list", "--remove": "remove"}


def main(argv: Sequence[str]) -> int:
    parser, commands = _parser()
    line = action_options.subcommand_form(list(argv), ACTIONS)
    action_options.check_subcommand(line, commands, ["--bootstrap", "--bootstrap-server"],
                                    parser.prog, ACTIONS)
    args = parser.parse_args(line)
    if args.bootstrap is None:
        parser.error("the following arguments are required: --bootstrap-server")
    try:
        with sasl_login.connect(args.bootstrap, args) as client:
            return int(args.run(client, args) or 0)
    except (KafkaError, OSError, ValueError) as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1


def _parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser and its subcommands."""
    parser = argparse.ArgumentParser(prog="groupcoord acls", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    # The broker is named before or after the subcommand, as `kafka-acls.sh` users write
    # `--bootstrap-server` anywhere.
    parser.add_argument("--bootstrap", "--bootstrap-server", default=None, metavar="HOST:PORT")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, run, help_text in (("add", _add, "create ACLs"),
                                 ("list", _list, "show ACLs"),
                                 ("remove", _remove, "delete ACLs")):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(run=run)
        p.add_argument("--bootstrap", "--bootstrap-server", default=argparse.SUPPRESS,
                       metavar="HOST:PORT")
        sasl_login.add_arguments(p)
        _resource_arguments(p, listing=name != "add")
        if name == "list":
            p.add_argument("--principal", default=None, help="only this principal's ACLs")
            p.add_argument("--json", action="store_true", help="one JSON object per ACL")
        else:
            _entry_arguments(p)
    return parser, list(sub.choices)


def _resource_arguments(p: argparse.ArgumentParser, *, listing: bool) -> None:
    p.add_argument("--topic", action="append", default=[])
    p.add_argument("--group", action="append", default=[])
    p.add_argument("--transactional-id", action="append", default=[])
    p.add_argument("--cluster", action="store_true")
    kinds = ("literal", "prefixed", "any", "match") if listing else ("literal", "prefixed")
    p.add_argument("--resource-pattern-type", choices=kinds, default="literal")


def _entry_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-principal", action="append", default=[])
    p.add_argument("--deny-principal", action="append", default=[])
    p.add_argument("--allow-host", action="append", default=[])
    p.add_argument("--deny-host", action="append", default=[])
    p.add_argument("--operation", action="append", default=[],
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                        "DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable)")


def _resources(args: argparse.Namespace) -> list[Resource]:
    found: list[Resource] = [(ResourceType.TOPIC, t) for t in args.topic]
    found += [(ResourceType.GROUP, g) for g in args.group]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def operation(name: str) -> AclOperation:
    """`Read`, `read`, `DescribeConfigs`, `describe_configs` -> the operation."""
    key = "".join(ch for ch in name.upper() if ch.isalpha())
    for op in AclOperation:
        if op.name.replace("_", "") == key and op not in (AclOperation.UNKNOWN, AclOperation.ANY):
            return op
    raise ValueError(f"unknown operation {name!r}")


def _entries(args: argparse.Namespace) -> Iterator[tuple[AclPermissionType, str, str]]:
    for permission, principals, hosts in (
            (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
            (AclPermissionType.DENY, args.deny_principal, args.deny_host)):
        for principal in principals:
            for host in hosts or ["*"]:
                yield permission, principal, host


def _add(client: Any, args: argparse.Namespace) -> int:
    resources = _resources(args)
    ops = [operation(o) for o in args.operation]
    if not resources or not ops or not (args.allow_principal or args.deny_principal):
        raise ValueError("add needs a resource, --operation and --allow-principal or "
                         "--deny-principal")
    pattern = PatternType[args.resource_pattern_type.upper()]
    creations = [AclCreation(resource_type=int(rt), resource_name=name,
                             resource_pattern_type=int(pattern), principal=principal, host=host,
                             operation=int(op), permission_type=int(permission))
                 for rt, name in resources for permission, principal, host in _entries(args)
                 for op in ops]
    response, _ = client.request(CreateAclsRequest(creations=creations), 3)
    failed = 0
    for creation, result in zip(creations, response.results, strict=True):
        if result.error_code:
            failed += 1
            sys.stderr.write(f"Error adding {_describe(creation)}: "
                             f"{KafkaError(result.error_code, result.error_message or 'CreateAcls')}\n")
    print(f"Added {len(creations) - failed} of {len(creations)} ACLs")
    return 1 if failed else 0


def _filters(args: argparse.Namespace) -> list[dict[str, Any]]:
    pattern = PatternType[args.resource_pattern_type.upper()]
    resources: list[tuple[ResourceType, str | None]] = list(_resources(args)) or \
        [(ResourceType.ANY, None)]
    entries: list[tuple[AclPermissionType, str | None, str | None]] = []
    for permission, principals, hosts in (
            (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
            (AclPermissionType.DENY, args.deny_principal, args.deny_host)):
        entries += [(permission, p, h) for p in principals for h in hosts or [None]]
    entries = entries or [(AclPermissionType.ANY, None, None)]
    ops = [operation(o) for o in args.operation] or [AclOperation.ANY]
    return [{"resource_type_filter": int(rt), "resource_name_filter": name,
                 "pattern_type_filter": int(pattern if name is not None else PatternType.ANY),
                 "principal_filter": principal, "host_filter": host, "operation": int(op),
                 "permission_type": int(perm)}
            for rt, name in resources for perm, principal, host in entries for op in ops]


def _remove(client: Any, args: argparse.Namespace) -> int:
    filters = [DeleteAclsFilter(**f) for f in _filters(args)]
    response, _ = client.request(DeleteAclsRequest(filters=filters), 3)
    removed = 0
    for result in response.filter_results:
        check(result.error_code, f"DeleteAcls: {result.error_message}")
        for m in result.matching_acls:
            removed += 1
            print(f"Removed {_line(m.resource_type, m.resource_name, m.pattern_type, m)}")
    print(f"Removed {removed} ACLs")
    return 0


def _list(client: Any, args: argparse.Namespace) -> int:
    pattern = PatternType[args.resource_pattern_type.upper()]
    targets: list[tuple[ResourceType, str | None]] = list(_resources(args)) or \
        [(ResourceType.ANY, None)]
    for rt, name in targets:
        response, _ = client.request(DescribeAclsRequest(
            resource_type_filter=int(rt), resource_name_filter=name,
            pattern_type_filter=int(pattern if name is not None else PatternType.ANY),
            principal_filter=args.principal, host_filter=None, operation=int(AclOperation.ANY),
            permission_type=int(AclPermissionType.ANY)), 3)
        check(response.error_code, f"DescribeAcls: {response.error_message}")
        for res in sorted(response.resources, key=lambda r: (r.resource_type, r.resource_name)):
            for a in sorted(res.acls, key=lambda a: (a.principal, a.operation, a.host)):
                if args.json:
                    print(json.dumps(_json(res, a)))
                else:
                    print(_line(res.resource_type, res.resource_name, res.pattern_type, a))
    return 0


def _name(enum: type[Any], code: int) -> str:
    return str(from_code(enum, code).name)


def _json(res: Any, a: Any) -> dict[str, Any]:
    return {"resource_type": _name(ResourceType, res.resource_type),
            "resource_name": res.resource_name,
            "pattern_type": _name(PatternType, res.pattern_type), "principal": a.principal,
            "host": a.host, "operation": _name(AclOperation, a.operation),
            "permission_type": _name(AclPermissionType, a.permission_type)}


def _line(rt: int, name: str, pt: int, a: Any) -> str:
    return (f"{_name(ResourceType, rt)}:{_name(PatternType, pt)}:{name} "
            f"{a.principal} {_name(AclPermissionType, a.permission_type)} "
            f"{_name(AclOperation, a.operation)} from host {a.host}")


def _describe(c: AclCreation) -> str:
    return _line(c.resource_type, c.resource_name, c.resource_pattern_type, c)
