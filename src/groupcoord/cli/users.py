"""`groupcoord users add|list|remove --data-dir D`: SCRAM users of a broker's data dir.

The offline counterpart of Kafka's `kafka-storage.sh format --add-scram` and
`kafka-configs.sh --alter --entity-type users --add-config 'SCRAM-SHA-256=[...]'`: it edits
`scram-credentials.json` in the data dir directly, salted (salt, iterations, StoredKey,
ServerKey; the password itself is never stored). Use it on a stopped broker: a running one
reads the file at start-up and is changed online with AlterUserScramCredentials (any Kafka
admin client); `add` and `remove` refuse a data dir a broker holds (its `.lock`). The
password comes from `--password`, or `--password-stdin` so it stays out of the process list
and the shell history.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from groupcoord.cli import action_options
from groupcoord.security.scram import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISMS,
    credential_from_password,
)
from groupcoord.security.scram_store import ScramCredentialStore
from groupcoord.storage.dir_lock import lock_data_dir


def main(argv: Sequence[str]) -> int:
    parser, commands = _parser()
    action_options.check_subcommand(list(argv), commands, [], parser.prog)
    args = parser.parse_args(list(argv))
    try:
        # A change takes the data dir's lock, as a broker does: a running broker owns the
        # file and would never see (and later overwrite) an offline edit.
        held = None if args.run is cmd_list else lock_data_dir(args.data_dir)
        try:
            store = ScramCredentialStore(args.data_dir)
            return int(args.run(store, args) or 0)
        finally:
            if held is not None:
                held.release()
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1


def _parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser and its subcommands."""
    parser = argparse.ArgumentParser(prog="groupcoord users", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    mechanisms = sorted(MECHANISMS)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--data-dir", required=True, help="the broker's log directory")
        return p

    p = add("add", "add a user, or replace its credentials")
    p.add_argument("--user", required=True)
    secret = p.add_mutually_exclusive_group(required=True)
    secret.add_argument("--password")
    secret.add_argument("--password-stdin", action="store_true",
                        help="read the password from the first line of stdin")
    p.add_argument("--mechanism", action="append", choices=mechanisms, default=None,
                   help="repeatable (default: both SCRAM mechanisms)")
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                   help=f"PBKDF2 iterations, 4096..{MAX_ITERATIONS} (default {DEFAULT_ITERATIONS})")
    p.set_defaults(run=cmd_add)
    p = add("list", "users and their mechanisms (never keys)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=cmd_list)
    p = add("remove", "remove a user's credentials")
    p.add_argument("--user", required=True)
    p.add_argument("--mechanism", action="append", choices=mechanisms, default=None,
                   help="repeatable (default: every mechanism of the user)")
    p.set_defaults(run=cmd_remove)
    return parser, list(sub.choices)


def cmd_add(store: ScramCredentialStore, args: argparse.Namespace) -> int:
    password = sys.stdin.readline().rstrip("\n") if args.password_stdin else args.password
    if not args.user or not password:
        raise ValueError("user name and password must not be empty")
    for name in args.mechanism or sorted(MECHANISMS):
        if not MECHANISMS[name].min_iterations <= args.iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be {MECHANISMS[name].min_iterations}.."
                             f"{MAX_ITERATIONS} for {name}")
    names = args.mechanism or sorted(MECHANISMS)
    store.apply([(args.user, name, credential_from_password(MECHANISMS[name], password,
                                                            args.iterations))
                 for name in names])
    sys.stdout.write(f"{args.user}: {', '.join(names)}\n")
    return 0


def cmd_list(store: ScramCredentialStore, args: argparse.Namespace) -> int:
    users = {user: {name: cred.iterations for name, cred in sorted(mechs.items())}
             for user, mechs in sorted(store.users().items())}
    if args.json:
        sys.stdout.write(json.dumps(users, indent=1) + "\n")
        return 0
    for user, mechs in users.items():
        described = ", ".join(f"{name} (iterations={count})" for name, count in mechs.items())
        sys.stdout.write(f"{user}: {described}\n")
    return 0


def cmd_remove(store: ScramCredentialStore, args: argparse.Namespace) -> int:
    held = store.users().get(args.user, {})
    names = args.mechanism or sorted(held)
    missing = [name for name in names if name not in held]
    if not held or missing:
        raise ValueError(f"user {args.user!r} has no {', '.join(missing) or 'SCRAM'} "
                         f"credential")
    store.apply(deletions=[(args.user, name) for name in names])
    sys.stdout.write(f"{args.user}: removed {', '.join(names)}\n")
    return 0
