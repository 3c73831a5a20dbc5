"""Kafka's tools name their action with an option (`kafka-consumer-groups.sh --describe`,
`kafka-acls.sh --add`); ours with a subcommand. `subcommand_form` reads the first as the
second, so both command lines work."""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.cli.main import UsageError


def subcommand_form(argv: list[str], actions: Mapping[str, str]) -> list[str]:
    """`argv` with its action option (a key of `actions`) moved to the front as the
    subcommand it names; unchanged without one."""
    given = [arg for arg in argv if arg in actions]
    if not given:
        return argv
    if len(given) > 1:  # the words of Kafka's `checkArgs`
        raise UsageError("Command must include exactly one action: " + ", ".join(actions))
    rest = list(argv)
    rest.remove(given[0])
    return [actions[given[0]], *rest]
