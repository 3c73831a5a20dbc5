"""Hypothesis strategies for any generated message, record or struct, built from the specs.

The spec model comes from ``tools/gen_spec.py`` (the generator's own parser); the classes come
from the generated modules. A strategy for ``(spec, version)`` sets exactly the fields present
in that version, so ``decode(encode(x)) == x`` must hold for every drawn ``x``.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_messages
from gen_spec import FieldSpec, MessageSpec, StructSpec

from groupcoord.wire.errors import ErrorCode

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
BLOBS = st.binary(max_size=24)


@dataclass(frozen=True)
class Case:
    """One spec in one package: the parsed spec and its generated class."""

    spec: MessageSpec
    cls: type

    @property
    def id(self) -> str:
        return self.spec.name


@cache
def all_cases() -> list[Case]:
    """Every generated top-level class with its spec (messages, data, headers, records)."""
    cases: list[Case] = []
    packages = (("messages", "groupcoord.wire.generated"),
                ("records", "groupcoord.logformat.generated"),
                ("share-records", "groupcoord.logformat.generated"))
    for sub, package in packages:
        for name, specs in sorted(gen_messages.load_group(gen_messages.SPEC_DIR / sub).items()):
            module = importlib.import_module(f"{package}.{name}")
            for spec in specs:
                cases.append(Case(spec, getattr(module, spec.name)))
    return cases


def message_versions() -> list[tuple[Case, int]]:
    return [(case, v) for case in all_cases() for v in case.spec.iter_versions()]


def struct_class(owner: type, struct: StructSpec) -> type:
    """The generated class of a nested struct: message classes carry them by spec name."""
    cls: type = getattr(owner, struct.name)
    return cls


def instance(case: Case, version: int) -> st.SearchStrategy[Any]:
    return _struct(case.cls, case.cls, case.spec.root, version)


#: Known error codes: oracles that type error codes as an enum reject other numbers.
#: kio 0.6.5 and kafka-python know Kafka's codes up to 133 (4.3); 4.4's 134-136 are left out.
ERROR_CODES = st.sampled_from(sorted(int(code) for code in ErrorCode
                                     if code <= ErrorCode.SHARE_SESSION_LIMIT_REACHED))
#: int64 times and durations: kio maps them to datetime/timedelta, which have smaller ranges.
TIMES = st.integers(0, 2**40)


def _struct(owner: type, cls: type, struct: StructSpec, version: int) -> st.SearchStrategy[Any]:
    fields = {f.attr: _field(owner, f, version) for f in struct.fields if version in f.versions}
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def _field(owner: type, f: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    nullable = version in f.nullable
    if f.is_array:
        elem = _elem(owner, f, version)
        base: st.SearchStrategy[Any] = st.lists(elem, max_size=3)
    elif f.struct is not None:
        base = _struct(owner, struct_class(owner, f.struct), f.struct, version)
    elif f.name.endswith("ErrorCode") and f.type == "int16":
        base = ERROR_CODES
    elif f.type == "int64" and (f.name.endswith("Ms") or "Timestamp" in f.name):
        base = TIMES
    else:
        base = _prim(f.type)
    return st.one_of(st.none(), base) if nullable else base


def _elem(owner: type, f: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if f.struct is not None:
        return _struct(owner, struct_class(owner, f.struct), f.struct, version)
    return _prim(f.elem)


def _prim(t: str) -> st.SearchStrategy[Any]:
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.integers(lo, hi)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.binary(min_size=16, max_size=16)
    if t == "string":
        return TEXT
    return BLOBS  # bytes and records
