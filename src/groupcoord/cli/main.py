"""`groupcoord <command>`: dispatch to the subcommand modules.

Subcommands are imported only when chosen, so `groupcoord serve` pays for nothing else
(start-up time matters to tests that start many brokers). A subcommand module exposes
`main(argv) -> int`; optional ones (`demo`, `groups`, `analyze`) are listed only when their
module exists.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("groupcoord.cli.serve", "run the broker"),
    "demo": ("groupcoord.cli.demo", "run the end-to-end demo"),
    "groups": ("groupcoord.cli.groups", "list/describe/delete consumer groups, reset offsets"),
    "analyze": ("groupcoord.cli.analyze", "group analytics over log dirs"),
    "acls": ("groupcoord.cli.acls", "add/list/remove ACLs of a running broker"),
    "users": ("groupcoord.cli.users", "add/list/remove SCRAM users of a data dir"),
}

USAGE = "usage: groupcoord <command> [options]\n\ncommands:\n"


def _available() -> dict[str, tuple[str, str]]:
    from importlib.util import find_spec

    return {name: entry for name, entry in COMMANDS.items() if find_spec(entry[0]) is not None}


def _usage() -> str:
    lines = [f"  {name:<9} {help_text}" for name, (_, help_text) in _available().items()]
    return USAGE + "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    entry = COMMANDS.get(name)
    if entry is None:
        sys.stderr.write(f"groupcoord: unknown command {name!r}\n{_usage()}")
        return 2
    if name == "serve":
        # Before the serve module and asyncio are imported: start-up allocates long-lived
        # objects only, and `serve` collects once and resumes the collector when the broker
        # has started (`server.heap`).
        from groupcoord.server import heap

        heap.pause_until_started()
    try:
        module = importlib.import_module(entry[0])
    except ModuleNotFoundError as exc:
        if exc.name != entry[0]:
            raise
        sys.stderr.write(f"groupcoord: command {name!r} is not available in this build\n")
        return 2
    result = module.main(rest)
    return int(result or 0)
