"""`groupcoord groups` command lines as `kafka-consumer-groups.sh` users type them.

Kafka's tool names its action with an option (`--describe --group g --members`, `--list`,
`--delete --all-groups`, `--reset-offsets ...`); ours with a subcommand (`describe g
--members`). `subcommand_form` turns the first into the second, and the subcommands take
Kafka's `--group` (repeatable where several groups make sense), `--all-groups`,
`--bootstrap-server` after the action and the `--describe` views `--state`, `--members`,
`--offsets` (with `--verbose`, which changes nothing here: the member view always shows
epochs and assignments).
"""

from __future__ import annotations

import argparse

from groupcoord.cli import action_options
from groupcoord.cli.main import UsageError

#: Kafka's action options and the subcommand each is.
ACTIONS = {"--list": "list", "--describe": "describe", "--delete": "delete",
           "--reset-offsets": "reset-offsets", "--delete-offsets": "delete-offsets"}


def subcommand_form(argv: list[str]) -> list[str]:
    """`argv` with Kafka's action option moved to the front as our subcommand."""
    return action_options.subcommand_form(argv, ACTIONS)


def add_group_arguments(p: argparse.ArgumentParser, *, many: bool) -> None:
    """The group(s) a subcommand works on: positional, or Kafka's `--group`."""
    if many:
        p.add_argument("groups", nargs="*", metavar="GROUP")
        p.add_argument("--group", dest="group_option", action="append", default=[],
                       metavar="GROUP", help="a group (repeatable)")
        p.add_argument("--all-groups", action="store_true",
                       help="every consumer group (classic and consumer)")
    else:
        p.add_argument("group", nargs="?", metavar="GROUP")
        p.add_argument("--group", dest="group_option", metavar="GROUP", default=None)


def resolve_groups(args: argparse.Namespace) -> None:
    """Merge `--group` into the positional group(s); a command without one fails as
    Kafka's does."""
    values = vars(args)
    if "group_option" not in values:
        return
    if "groups" in values:
        args.groups = [*args.groups, *args.group_option]
        if not args.groups and not args.all_groups:
            raise UsageError(f"Option [{args.command}] takes one of these options: "
                             "--all-groups, --group")
        return
    args.group = args.group or args.group_option
    if not args.group:
        raise UsageError(f"Option [{args.command}] takes the option: --group")
