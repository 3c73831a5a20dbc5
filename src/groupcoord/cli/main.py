"""`groupcoord <command>`: dispatch to the subcommand modules.

Subcommands are imported only when chosen, so `groupcoord serve` pays for nothing else
(start-up time matters to tests that start many brokers). A subcommand module exposes
`main(argv) -> int`; optional ones (`demo`, `groups`, `analyze`) are listed only when their
module exists. A user's mistake is a `UsageError`: one line naming it, no traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("groupcoord.cli.serve", "run the broker"),
    "demo": ("groupcoord.cli.demo", "run the end-to-end demo"),
    "cluster-demo": ("groupcoord.cli.cluster_demo",
                     "three nodes on PostgreSQL, one killed, the group moving on"),
    "groups": ("groupcoord.cli.groups", "list/describe/delete consumer groups, reset offsets"),
    "analyze": ("groupcoord.cli.analyze", "group analytics over log dirs"),
    "acls": ("groupcoord.cli.acls", "add/list/remove ACLs of a running broker"),
    "users": ("groupcoord.cli.users", "add/list/remove SCRAM users of a data dir"),
}

USAGE = "usage: groupcoord [--version] <command> [options]\n\ncommands:\n"
DISTRIBUTION = "groupcoord"


class UsageError(Exception):
    """A user's mistake (a bad option value, a missing file, an address in use): `main`
    prints `groupcoord <command>: <message>` as one line and exits with `status`."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _available() -> dict[str, tuple[str, str]]:
    from importlib.util import find_spec

    return {name: entry for name, entry in COMMANDS.items() if find_spec(entry[0]) is not None}


def _usage() -> str:
    lines = [f"  {name:<9} {help_text}" for name, (_, help_text) in _available().items()]
    return USAGE + "\n".join(lines) + "\n"


def _version() -> str:
    """The installed package's version (pyproject.toml is its one definition)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        raise UsageError("version unknown: groupcoord is not installed "
                         "(pip install . in the checkout)", status=1) from None


def unknown_command(name: str, commands: Sequence[str], prog: str = "groupcoord"
                    ) -> UsageError:
    """git's answer to a typo: the closest of `commands`, else the list of them (`prog`
    is the command whose --help lists them)."""
    from difflib import get_close_matches

    close = get_close_matches(name, commands, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else \
        f"; commands: {', '.join(commands)} ({prog} --help)"
    return UsageError(f"unknown command {name!r}{hint}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else ""
    try:
        return _dispatch(args)
    except UsageError as exc:
        prefix = f"groupcoord {command}" if command in COMMANDS else "groupcoord"
        sys.stderr.write(f"{prefix}: {exc}\n")
        return exc.status
    except KeyboardInterrupt:
        return 130  # Ctrl-C: the shell's status for SIGINT, without a traceback


def _dispatch(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_usage())
        return 0 if args else 2
    if args[0] == "--version":
        sys.stdout.write(f"groupcoord {_version()}\n")
        return 0
    name, rest = args[0], args[1:]
    entry = COMMANDS.get(name)
    if entry is None:
        raise unknown_command(name, list(_available()))
    if name == "serve":
        # Before the serve module and asyncio are imported: start-up allocates long-lived
        # objects only, and `serve` collects once and resumes the collector when the broker
        # has started (`server.runtime.heap`).
        from groupcoord.server.runtime import heap

        heap.pause_until_started()
    try:
        module = importlib.import_module(entry[0])
    except ModuleNotFoundError as exc:
        if exc.name != entry[0]:
            raise
        raise UsageError(f"command {name!r} is not available in this build") from None
    try:
        result = module.main(rest)
    except ModuleNotFoundError as exc:
        extra = _extra_providing(exc.name or "")
        if extra is None:
            raise
        raise UsageError(f"needs the [{extra}] extra (no module named {exc.name!r}): "
                         f"pip install '<checkout or wheel>[{extra}]'") from None
    return int(result or 0)


def _extra_providing(module: str) -> str | None:
    """The optional extra of the installed package that requires `module`'s distribution
    (`pyspark` -> `spark`), from the package metadata."""
    import re
    from importlib.metadata import PackageNotFoundError, requires

    try:
        requirements = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return None
    top = module.partition(".")[0].replace("_", "-").lower()
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if name and extra and name.group(0).replace("_", "-").lower() == top:
            return extra.group(1)
    return None
