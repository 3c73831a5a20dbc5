"""Issue 10, must-show 4: fuzz tests generating oversized and hostile fields from the specs.

Walks the JSON specs of the coordinator requests (the generator's own parser,
`tools/gen_spec.py`) and, for every string field of every flexible version served, sends a
random valid request (hypothesis, `tests/wire/wire_strategies.py`) whose every array has
an element and whose chosen field holds an oversized value (one to four UTF-8 bytes per
character, 32,768 bytes and more). The broker must answer Kafka's error in every part of
the response, keep the connection, leave every coordinator untouched and log no error.
The expected code comes from the specs, not from the implementation's table:
INVALID_GROUP_ID where the spec marks the field `"entityType": "groupId"` (or names it
GroupId), INVALID_REQUEST elsewhere. OffsetDelete has no flexible version, so its strings
cannot exceed 32,767 bytes.

A second fuzz test sends values that are legal but hostile to every string, bytes and array
field of every served version: empty, NUL and control characters, names of internal
topics, 32,767-byte strings, 1.1 MB of metadata, arrays of 20,000 elements. Those reach
the coordinators; the broker must answer each (a parked JoinGroup, SyncGroup or ShareFetch
may instead wait, on its own connection) and log no error: no shard fails or reloads, no
handler or encoder raises.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from request_fields_support import (
    COORDINATOR_API_KEYS,
    BrokerThread,
    ErrorLog,
    assert_answered,
    error_log,
)

from groupcoord.apis.registry import handlers
from groupcoord.wire.errors import ErrorCode as E

_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "tests" / "wire"))
sys.path.insert(0, str(_ROOT / "tools"))
import gen_messages
from gen_spec import FieldSpec, StructSpec, load_json, snake
from wire_strategies import Case, all_cases, instance, struct_class

#: A failing example is reported as drawn: shrinking re-sends requests that may each wait
#: for a timeout, which would stretch a failure to many minutes.
NO_SHRINKING = (Phase.explicit, Phase.reuse, Phase.generate)


@pytest.fixture(scope="module")
def errors() -> Iterator[ErrorLog]:
    with error_log() as handler:
        yield handler


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, errors: ErrorLog) -> Iterator[BrokerThread]:
    running = BrokerThread(tmp_path_factory.mktemp("limits"))
    yield running
    running.close()


@dataclass(frozen=True)
class Target:
    """A string field (dotted attribute path) of a coordinator request, and its versions."""

    case: Case
    path: tuple[FieldSpec, ...]
    versions: tuple[int, ...]
    code: int

    @property
    def id(self) -> str:
        return f"{self.case.spec.name}.{'.'.join(f.attr for f in self.path)}"


def _group_id_paths(spec_name: str) -> set[tuple[str, ...]]:
    """Paths (snake_case) the raw spec marks as group ids."""
    raw = load_json(gen_messages.SPEC_DIR / "messages" / f"{spec_name}.json")
    found: set[tuple[str, ...]] = set()

    def walk(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> None:
        for field in fields:
            path = (*prefix, snake(field["name"]))
            if field.get("entityType") == "groupId" or field["name"] == "GroupId":
                found.add(path)
            walk(field.get("fields", []), path)
    walk(raw["fields"], ())
    return found


def _string_paths(struct: StructSpec, version: int,
                  prefix: tuple[FieldSpec, ...] = ()) -> Iterator[tuple[FieldSpec, ...]]:
    for field in struct.fields:
        if version not in field.versions:
            continue
        path = (*prefix, field)
        if field.type == "string" or (field.is_array and field.elem == "string"):
            yield path
        elif field.struct is not None:
            yield from _string_paths(field.struct, version, path)


def fuzz_targets() -> list[Target]:
    table = handlers()
    targets: dict[tuple[str, tuple[str, ...]], tuple[Case, tuple[FieldSpec, ...], list[int]]] = {}
    for case in all_cases():
        spec = case.spec
        if spec.kind != "request" or spec.api_key not in COORDINATOR_API_KEYS:
            continue
        served = table[spec.api_key]
        for version in range(served.min_version, served.max_version + 1):
            # Share API v0 (3.9 early access) is hand-coded outside the 4.3 specs.
            if not served.is_flexible(version) or version not in spec.valid:
                continue
            for path in _string_paths(spec.root, version):
                key = (spec.name, tuple(f.attr for f in path))
                targets.setdefault(key, (case, path, []))[2].append(version)
    result = []
    for (name, attrs), (case, path, versions) in sorted(targets.items(), key=lambda kv: kv[0]):
        code = E.INVALID_GROUP_ID if attrs in _group_id_paths(name) else E.INVALID_REQUEST
        result.append(Target(case, path, tuple(versions), int(code)))
    return result


#: Oversized values: one to four UTF-8 bytes per character, just over or far over the limit.
OVERSIZED_TEXT = st.builds(
    lambda char, extra: char * (32_767 // len(char.encode()) + 1 + extra),
    st.sampled_from(["g", "\x00", "\u00e9", "\u20ac", "\U0001F600"]),
    st.integers(0, 20_000))


def _put(owner: type, message: Any, path: tuple[FieldSpec, ...], value: str) -> None:
    """Set the field at `path` to `value`, adding an element to empty arrays on the way."""
    field, rest = path[0], path[1:]
    current = getattr(message, field.attr)
    if not rest:
        if field.is_array:
            setattr(message, field.attr, [*(current or []), value])
        else:
            setattr(message, field.attr, value)
        return
    assert field.struct is not None
    element_cls = struct_class(owner, field.struct)
    if field.is_array:
        if not current:
            current = [element_cls()]
            setattr(message, field.attr, current)
        _put(owner, current[-1], rest, value)
    else:
        if current is None:
            current = element_cls()
            setattr(message, field.attr, current)
        _put(owner, current, rest, value)


_ELEMENT_DEFAULTS: dict[str, Any] = {"string": "x", "uuid": bytes(16), "bool": False,
                                     "bytes": b""}


def _fill(owner: type, message: Any, struct: StructSpec, version: int) -> None:
    """Give every array of the request at least one element, so that each part of Kafka's
    error response (per group, topic, partition, key or resource) has an entry to carry
    the error code."""
    for field in struct.fields:
        if version not in field.versions:
            continue
        value = getattr(message, field.attr)
        if field.is_array:
            if not value:
                element = (struct_class(owner, field.struct)() if field.struct is not None
                           else _ELEMENT_DEFAULTS.get(field.elem, 0))
                value = [element]
                setattr(message, field.attr, value)
            if field.struct is not None:
                for element in value:
                    _fill(owner, element, field.struct, version)
        elif field.struct is not None and value is not None:
            _fill(owner, value, field.struct, version)


TARGETS = fuzz_targets()


def test_fuzz_targets_cover_every_coordinator_api() -> None:
    apis = {t.case.spec.api_key for t in TARGETS}
    # OffsetDelete (47) has no flexible version: int16 lengths bound its strings.
    assert apis == set(COORDINATOR_API_KEYS) - {47}


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.id)
@settings(max_examples=3, deadline=None, derandomize=True, phases=NO_SHRINKING,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_oversized_fields_from_the_specs(broker: BrokerThread, errors: ErrorLog,
                                              target: Target, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(target.versions), label="version")
    request = data.draw(instance(target.case, version), label="request")
    _fill(target.case.cls, request, target.case.spec.root, version)
    _put(target.case.cls, request, target.path, data.draw(OVERSIZED_TEXT, label="value"))
    response = broker.call(request, version)
    assert_answered(response, target.code)
    assert broker.untouched()
    assert errors.messages == []


# -- legal but hostile values ---------------------------------------------------------------

#: APIs whose reply the coordinator may park (rebalance, long-poll): waiting is an answer.
PARKING_API_KEYS = frozenset({11, 14, 78})
HOSTILE_TEXT = st.sampled_from([
    "", "\x00", "\t\r\n", " ", "-1", ".", "..", "__consumer_offsets", "g:t:0", "\ufeff",
    "x" * 32_767, "\u20ac" * 10_922, "\U0001F600" * 8_191])
HOSTILE_BYTES = st.sampled_from([0, 1, 70_000, 1_100_000]).map(lambda n: b"\xff" * n)
HOSTILE_COUNTS = st.sampled_from([0, 1_000, 20_000])


@dataclass(frozen=True)
class FieldTarget:
    """A string, bytes or array field of a coordinator request, and its served versions."""

    case: Case
    path: tuple[FieldSpec, ...]
    versions: tuple[int, ...]

    @property
    def id(self) -> str:
        return f"{self.case.spec.name}.{'.'.join(f.attr for f in self.path)}"


def _hostile_paths(struct: StructSpec, version: int,
                   prefix: tuple[FieldSpec, ...] = ()) -> Iterator[tuple[FieldSpec, ...]]:
    for field in struct.fields:
        if version not in field.versions:
            continue
        path = (*prefix, field)
        if field.is_array or field.type in ("string", "bytes"):
            yield path
        if field.struct is not None:
            yield from _hostile_paths(field.struct, version, path)


def hostile_targets() -> list[FieldTarget]:
    table = handlers()
    found: dict[tuple[str, tuple[str, ...]], tuple[Case, tuple[FieldSpec, ...], list[int]]] = {}
    for case in all_cases():
        spec = case.spec
        if spec.kind != "request" or spec.api_key not in COORDINATOR_API_KEYS:
            continue
        served = table[spec.api_key]
        for version in range(served.min_version, served.max_version + 1):
            if version not in spec.valid:
                continue
            for path in _hostile_paths(spec.root, version):
                key = (spec.name, tuple(f.attr for f in path))
                found.setdefault(key, (case, path, []))[2].append(version)
    return [FieldTarget(case, path, tuple(versions))
            for _key, (case, path, versions) in sorted(found.items(), key=lambda kv: kv[0])]


def _hostile_value(owner: type, field: FieldSpec, data: st.DataObject) -> Any:
    if field.is_array:
        count = data.draw(HOSTILE_COUNTS, label="count")
        if field.struct is not None:
            element_cls = struct_class(owner, field.struct)
            return [element_cls() for _ in range(count)]
        if field.elem == "string":
            return [f"t{i}" for i in range(count)]
        if field.elem == "uuid":
            return [i.to_bytes(16, "big") for i in range(count)]
        return [i % 100 for i in range(count)]
    if field.type == "bytes":
        return data.draw(HOSTILE_BYTES, label="bytes")
    return data.draw(HOSTILE_TEXT, label="text")


def _set_at(owner: type, message: Any, path: tuple[FieldSpec, ...], value: Any) -> None:
    """Set the field at `path`, adding an element to empty arrays on the way."""
    field, rest = path[0], path[1:]
    if not rest:
        setattr(message, field.attr, value)
        return
    assert field.struct is not None
    current = getattr(message, field.attr)
    if field.is_array:
        if not current:
            current = [struct_class(owner, field.struct)()]
            setattr(message, field.attr, current)
        current = current[-1]
    elif current is None:
        current = struct_class(owner, field.struct)()
        setattr(message, field.attr, current)
    _set_at(owner, current, rest, value)


def _bound_waits(request: Any) -> None:
    """Keep parked replies short: a join waits at most a second for the other members,
    a share fetch does not long-poll."""
    if request.API_KEY == 11:
        request.rebalance_timeout_ms = 1_000
    if request.API_KEY == 78:
        request.max_wait_ms = 0


HOSTILE_TARGETS = hostile_targets()


@pytest.fixture(scope="module")
def busy_broker(tmp_path_factory: pytest.TempPathFactory,
                errors: ErrorLog) -> Iterator[BrokerThread]:
    running = BrokerThread(tmp_path_factory.mktemp("hostile"))
    running.inproc.broker.topics.create("t", 3, {})
    yield running
    running.close()


@pytest.mark.slow
@pytest.mark.parametrize("target", HOSTILE_TARGETS, ids=lambda t: t.id)
@settings(max_examples=3, deadline=None, derandomize=True, phases=NO_SHRINKING,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_hostile_values_from_the_specs(busy_broker: BrokerThread, errors: ErrorLog,
                                            target: FieldTarget, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(target.versions), label="version")
    request = data.draw(instance(target.case, version), label="request")
    _bound_waits(request)
    _set_at(target.case.cls, request, target.path,
            _hostile_value(target.case.cls, target.path[-1], data))
    try:
        busy_broker.call_on_new_connection(request, version, timeout=5.0)
    except TimeoutError:
        assert request.API_KEY in PARKING_API_KEYS
    assert errors.messages == []
