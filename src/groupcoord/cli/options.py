"""Long options declared once as a table: argparse is built from it for help and errors, and
`parse_plain` reads an ordinary command line from it without importing argparse.

`groupcoord serve` starts a broker, and its time to the first ApiVersions answer counts:
importing argparse (with gettext) and adding 40 options to a parser costs about 12 M
instructions, a quarter of what the broker itself runs before its listener is bound.
`parse_plain` takes only command lines whose meaning is unambiguous (exact option names,
values that do not start with `-`, valid ints and choices) and answers None for anything
else (`--help`, abbreviations, errors, `--`), which then goes to argparse: help, usage and
error messages are argparse's, and a command line argparse would read differently never
takes the fast path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import argparse

#: `value`: one value, the last given wins; `append`: every value, in order; `flag`: True
#: when given (`store_true`); `switch`: `--x` True, `--no-x` False (`BooleanOptionalAction`).
Kind = Literal["value", "append", "flag", "switch"]


class Option:
    """One long option. A plain class: a NamedTuple's class is built by `exec` at import,
    which costs more than the whole table here."""

    __slots__ = ("choices", "default", "dest", "flag", "help", "kind", "metavar", "type")

    def __init__(self, flag: str, *, kind: Kind = "value", default: object = None,
                 type: Callable[[str], object] | None = None,
                 choices: tuple[str, ...] | None = None, metavar: str | None = None,
                 help: str | None = None) -> None:
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        self.kind: Kind = kind
        self.default = default
        self.type = type
        self.choices = choices
        self.metavar = metavar
        self.help = help

    def __repr__(self) -> str:
        return f"Option({self.flag!r}, kind={self.kind!r})"


def add_to(parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    """Add `options` to an argparse parser, in order (the order of `--help`)."""
    import argparse

    actions: dict[Kind, str | type[argparse.Action]] = {
        "value": "store", "append": "append", "flag": "store_true",
        "switch": argparse.BooleanOptionalAction}
    for opt in options:
        kwargs: dict[str, object] = {"action": actions[opt.kind], "default": opt.default,
                                     "help": help_with_default(opt)}
        if opt.kind in ("value", "append"):
            kwargs.update(type=opt.type, choices=opt.choices, metavar=opt.metavar)
        parser.add_argument(opt.flag, **kwargs)  # type: ignore[arg-type]


def help_with_default(opt: Option) -> str | None:
    """The option's help with its default appended, unless the help already tells it
    (a computed or conditional default)."""
    if opt.help is None or "default" in opt.help:
        return opt.help
    default = opt.default
    if opt.kind in ("flag", "switch"):
        shown: object = "on" if default else "off"
    else:
        shown = "none" if default in (None, [], "") else default
    return f"{opt.help} (default: {str(shown).replace('%', '%%')})"


def parse_plain(options: Sequence[Option], argv: Sequence[str]) -> SimpleNamespace | None:
    """The values of `argv` as argparse would give them, or None when argparse must read it."""
    by_flag: dict[str, tuple[Option, bool]] = {}
    values: dict[str, object] = {}
    for opt in options:
        by_flag[opt.flag] = (opt, True)
        if opt.kind == "switch":
            by_flag["--no-" + opt.flag[2:]] = (opt, False)
        default = opt.default
        values[opt.dest] = list(default) if opt.kind == "append" and isinstance(
            default, list) else default
    i = 0
    while i < len(argv):
        flag, eq, inline = argv[i].partition("=")
        i += 1
        found = by_flag.get(flag)
        if found is None:
            return None
        opt, positive = found
        if opt.kind in ("flag", "switch"):
            if eq:
                return None
            values[opt.dest] = positive
            continue
        if eq:
            text = inline
        elif i < len(argv) and not argv[i].startswith("-"):
            text = argv[i]
            i += 1
        else:
            return None  # missing, or a value argparse may read as an option
        value = _converted(opt, text)
        if value is None:
            return None
        if opt.kind == "append":
            current = values[opt.dest]
            values[opt.dest] = [*current, value] if isinstance(current, list) else [value]
        else:
            values[opt.dest] = value
    return SimpleNamespace(**values)


def _converted(opt: Option, text: str) -> object | None:
    """`text` converted by the option's type and within its choices, else None."""
    value: object = text
    if opt.type is not None:
        try:
            value = opt.type(text)
        except (TypeError, ValueError):
            return None
    if opt.choices is not None and value not in opt.choices:
        return None
    return value
