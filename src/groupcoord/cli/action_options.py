"""Reading the action of a tool's command line. Kafka's tools name their action with an
option (`kafka-consumer-groups.sh --describe`, `kafka-acls.sh --add`); ours with a
subcommand. `subcommand_form` reads the first as the second, so both command lines work;
`check_subcommand` answers a mistyped subcommand (or action option) in one line naming the
closest one, where argparse would print its usage."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from groupcoord.cli.main import UsageError, unknown_command


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


def check_subcommand(argv: list[str], commands: Collection[str], value_options: list[str],
                     prog: str, actions: Collection[str] = ()) -> None:
    """UsageError when `argv`'s subcommand (its first positional; `value_options` are the
    options before the subcommand that take a value) is none of `commands`: an option
    close to one of Kafka's `actions` is named as the likely typo, else the closest
    command. A missing subcommand without such a typo is left to argparse (its usage is the
    answer)."""
    import argparse
    from difflib import get_close_matches

    probe = argparse.ArgumentParser(add_help=False)
    if value_options:
        probe.add_argument(*value_options)
    probe.add_argument("command", nargs="?")
    given = probe.parse_known_args(argv)[0].command
    if given in commands:
        return
    for arg in argv:
        option = arg.partition("=")[0]
        close = get_close_matches(option, list(actions), n=1, cutoff=0.8) \
            if option.startswith("--") else []
        if close:
            raise UsageError(f"unknown option {option!r}; did you mean {close[0]!r}?")
    if given is not None:
        raise unknown_command(given, list(commands), prog)
