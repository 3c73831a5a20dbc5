"""Model of Kafka's JSON message specs, as read by ``tools/gen_messages.py``.

Mirrors the parts of Kafka's ``generator/src/main/java/org/apache/kafka/message``
(``MessageSpec``, ``StructSpec``, ``FieldSpec``, ``Versions``) that decide the wire format:
version ranges, nullable/flexible/tagged versions, tags, defaults, common structs.
Prose fields (``about``) and Java-only hints (``entityType``, ``mapKey``, ``zeroCopy``) are
ignored because they do not change the bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OPEN_END = 1 << 15

#: Fixed-width primitive types and their ``struct`` codes (uuid is 16 raw bytes).
FIXED_CODES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
VAR_TYPES = {"string", "bytes", "records"}
PRIMITIVES = set(FIXED_CODES) | VAR_TYPES


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``lo > hi`` is the empty range ("none")."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        if text is None:
            if default is None:
                raise ValueError("missing version range")
            return default
        text = str(text).strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), OPEN_END)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def intersect(self, other: Versions) -> Versions:
        return Versions(max(self.lo, other.lo), min(self.hi, other.hi))

    def first(self) -> int | None:
        return None if self.empty else self.lo


NONE = Versions(1, 0)


def snake(name: str) -> str:
    """``SessionTimeoutMs`` -> ``session_timeout_ms``; ``KRaftVersion`` -> ``k_raft_version``."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out)
    return out.lower()


@dataclass(eq=False)
class FieldSpec:
    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    flexible_override: Versions | None
    struct: StructSpec | None = None

    @property
    def attr(self) -> str:
        return snake(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def elem(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def signature(self) -> Any:
        sub = self.struct.signature() if self.struct is not None else None
        return (self.name, self.type, self.versions, self.nullable, self.tagged, self.tag,
                str(self.default), self.flexible_override, sub)


@dataclass(eq=False)
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec] = field(default_factory=list)
    cls_name: str = ""
    owner: str = ""
    used: set[int] = field(default_factory=set)

    def signature(self) -> Any:
        return (self.versions, tuple(f.signature() for f in self.fields))


@dataclass(eq=False)
class MessageSpec:
    name: str
    kind: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    root: StructSpec
    structs: list[StructSpec]
    source: str

    def iter_versions(self) -> range:
        return range(self.valid.lo, self.valid.hi + 1)


def load_json(path: Path) -> dict[str, Any]:
    """Kafka's spec files are JSON with ``//`` line comments."""
    text = re.sub(r"^\s*//.*$", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    data: dict[str, Any] = json.loads(text)
    return data


class _Parser:
    def __init__(self, spec_name: str, commons: dict[str, dict[str, Any]]) -> None:
        self.spec_name = spec_name
        self.commons_raw = commons
        self.commons: dict[str, StructSpec] = {}
        self.structs: list[StructSpec] = []

    def struct(self, name: str, versions: Versions, raw_fields: list[dict[str, Any]]) -> StructSpec:
        spec = StructSpec(name=name, versions=versions, owner=self.spec_name)
        self.structs.append(spec)
        spec.fields = [self.field(raw) for raw in raw_fields]
        return spec

    def field(self, raw: dict[str, Any]) -> FieldSpec:
        tagged = Versions.parse(raw.get("taggedVersions"), NONE)
        # A tagged field may omit "versions"; it then exists exactly where it is tagged.
        versions = Versions.parse(raw.get("versions"), tagged if not tagged.empty else None)
        flex = raw.get("flexibleVersions")
        default = raw.get("default")
        if "default" in raw and default is None:
            default = "null"  # a JSON null and the string "null" mean the same
        spec = FieldSpec(
            name=raw["name"],
            type=raw["type"],
            versions=versions,
            nullable=Versions.parse(raw.get("nullableVersions"), NONE),
            tagged=tagged,
            tag=raw.get("tag"),
            default=default,
            flexible_override=None if flex is None else Versions.parse(flex),
        )
        elem = spec.elem
        if elem not in PRIMITIVES:
            if "fields" in raw:
                spec.struct = self.struct(elem, versions, raw["fields"])
            else:
                spec.struct = self.common(elem)
        return spec

    def common(self, name: str) -> StructSpec:
        if name not in self.commons:
            raw = self.commons_raw.get(name)
            if raw is None:
                raise ValueError(f"{self.spec_name}: unknown struct type {name}")
            # Register before parsing fields so self-references cannot loop forever.
            spec = StructSpec(name=name, versions=Versions.parse(raw["versions"]),
                              owner=self.spec_name)
            self.commons[name] = spec
            self.structs.append(spec)
            spec.fields = [self.field(f) for f in raw["fields"]]
        return self.commons[name]


def parse_spec(path: Path) -> MessageSpec | None:
    """Parse one spec file; ``None`` for APIs Kafka has removed (``validVersions: none``)."""
    raw = load_json(path)
    valid = Versions.parse(raw["validVersions"])
    if valid.empty or "fields" not in raw:
        return None
    commons = {c["name"]: c for c in raw.get("commonStructs", [])}
    parser = _Parser(raw["name"], commons)
    root = parser.struct(raw["name"], valid, raw["fields"])
    for name in commons:  # common structs nobody references still get a class
        parser.common(name)
    spec = MessageSpec(
        name=raw["name"],
        kind=raw["type"],
        api_key=raw.get("apiKey"),
        valid=valid,
        flexible=Versions.parse(raw.get("flexibleVersions"), NONE),
        root=root,
        structs=parser.structs,
        source=path.name,
    )
    mark_used(spec)
    return spec


def mark_used(spec: MessageSpec) -> None:
    """Record, per struct, the message versions in which it can appear."""

    def visit(struct: StructSpec, version: int) -> None:
        struct.used.add(version)
        for f in struct.fields:
            if f.struct is not None and version in f.versions:
                visit(f.struct, version)

    for version in spec.iter_versions():
        visit(spec.root, version)
