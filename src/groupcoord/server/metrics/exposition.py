"""The Prometheus text exposition format, version 0.0.4: one `# HELP` and `# TYPE` line per
family, then one line per sample (`name{label="value",...} number`)."""

from __future__ import annotations

import math
from collections.abc import Iterable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]


class Family:
    """One metric family: a name, its help text, its type, and its samples."""

    __slots__ = ("help", "kind", "name", "samples")

    def __init__(self, name: str, kind: str, help: str) -> None:
        self.name = name
        # "gauge", "counter" or "untyped" (what the JMX exporter gives Kafka's counts).
        self.kind = kind
        self.help = help
        self.samples: list[tuple[Labels, float]] = []

    def add(self, value: float, **labels: str) -> None:
        self.samples.append((tuple(labels.items()), value))


def render(families: Iterable[Family]) -> bytes:
    """The text of `families`; a family without samples is left out."""
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue
        out.append(f"# HELP {family.name} {_escape_help(family.help)}\n")
        out.append(f"# TYPE {family.name} {family.kind}\n")
        for labels, value in family.samples:
            if labels:
                text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
                out.append(f"{family.name}{{{text}}} {format_value(value)}\n")
            else:
                out.append(f"{family.name} {format_value(value)}\n")
    return "".join(out).encode("utf-8")


def format_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")
