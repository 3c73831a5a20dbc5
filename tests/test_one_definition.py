"""One definition per fact: varints, the record-batch header layout, the request header
(its parser, its class and the ApiVersions header-v0 rule), Kafka's error codes and the
internal topic names each live in one module, and a second copy elsewhere in src/ fails
here. So does a duck-typed seam in server/ or apis/ (`hasattr`/`getattr` on our own
objects, a module found by name).

The checks read the source (names of functions, struct format strings, constants assigned),
so they catch a re-typed copy, not only an import of the wrong module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from groupcoord.logformat import batch

SRC = Path(__file__).resolve().parents[1] / "src" / "groupcoord"

# function name pattern -> the one module allowed to define it (paths relative to SRC)
VARINT_HOME = "wire/primitives.py"
# The numba kernel cannot call Python; tests/analytics/test_fastpath.py checks it against wire.
VARINT_EXCEPTIONS = {("analytics/read/fastpath.py", "_varint")}
_VARINT_NAME = re.compile(r"varint|varlong|zigzag", re.IGNORECASE)
_VARINT_ADAPTERS = {("analytics/read/codec.py", "read_uvarint")}  # re-raises wire's error as CodecError

# struct codes of the batch header from attributes on (the CRC-covered tail), and whole
_BATCH_FORMATS = {batch.HEADER_STRUCT.format, batch.HEADER_STRUCT.format.lstrip(">"),
                  ">" + "".join(code for _, code in batch.HEADER_FIELDS[5:])}
_BATCH_CONSTANTS = {"HEADER_SIZE", "LOG_OVERHEAD", "MIN_BATCH_LENGTH"}
_BATCH_HOME = "logformat/batch.py"
_REQUEST_HEADER_FORMAT = ">hhi"
_REQUEST_HEADER_HOME = "wire/headers.py"


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if "/generated/" not in rel:
            out.append((rel, ast.parse(path.read_text(), filename=rel)))
    return out


SOURCES = _sources()


def test_varint_coders_are_defined_once() -> None:
    found = []
    for rel, tree in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _VARINT_NAME.search(
                    node.name) and rel != VARINT_HOME and (rel, node.name) not in (
                    VARINT_EXCEPTIONS | _VARINT_ADAPTERS):
                found.append(f"{rel}:{node.lineno} {node.name}")
    assert found == [], f"varint coders outside {VARINT_HOME}: {found}"


def _string_constants(tree: ast.Module) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_batch_header_layout_is_defined_once() -> None:
    found = []
    for rel, tree in SOURCES:
        if rel == _BATCH_HOME:
            continue
        found += [f"{rel}:{line} {value!r}" for line, value in _string_constants(tree)
                  if value in _BATCH_FORMATS]
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                found += [f"{rel}:{node.lineno} {t.id} =" for t in node.targets
                          if isinstance(t, ast.Name) and t.id in _BATCH_CONSTANTS]
    assert found == [], f"batch header layout outside {_BATCH_HOME}: {found}"


def test_request_header_is_parsed_once() -> None:
    found = [f"{rel}:{line}" for rel, tree in SOURCES if rel != _REQUEST_HEADER_HOME
             for line, value in _string_constants(tree) if value == _REQUEST_HEADER_FORMAT]
    assert found == [], f"request header struct outside {_REQUEST_HEADER_HOME}: {found}"


@pytest.mark.parametrize("name,code", batch.HEADER_FIELDS)
def test_batch_offsets_follow_the_field_list(name: str, code: str) -> None:
    """The named offsets are Kafka's (DefaultRecordBatch.*_OFFSET) and agree with the list."""
    kafka = {"base_offset": 0, "batch_length": 8, "partition_leader_epoch": 12, "magic": 16,
             "crc": 17, "attributes": 21, "last_offset_delta": 23, "base_timestamp": 27,
             "max_timestamp": 35, "producer_id": 43, "producer_epoch": 51, "base_sequence": 53,
             "records_count": 57}
    assert batch.FIELD_OFFSETS[name] == kafka[name]
    assert batch.HEADER_SIZE == 61 and batch.LOG_OVERHEAD == 12
    assert batch.BatchHeader._fields == tuple(n for n, _ in batch.HEADER_FIELDS)


def _int_value(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def test_error_codes_are_error_code_members() -> None:
    """No module re-declares a Kafka error code as a bare int (``NOT_COORDINATOR = 16``):
    ``groupcoord.wire.error_code_numbers`` is the one table (``ErrorCode`` names its numbers).
    ``NONE = 0`` is left out, as other enumerations (compression types) have a NONE of their
    own."""
    from groupcoord.wire.errors import ErrorCode

    codes = {member.name: member.value for member in ErrorCode if member.name != "NONE"}
    found = []
    for rel, tree in SOURCES:
        if rel == "wire/error_code_numbers.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _int_value(node.value) is not None:
                found += [f"{rel}:{node.lineno} {t.id}" for t in node.targets
                          if isinstance(t, ast.Name) and codes.get(t.id) == _int_value(node.value)]
    assert found == [], f"bare error codes (use ErrorCode members): {found}"


# Reflection on the project's own objects is a duck-typed seam; these by-name walks over
# generated fields (or the stdlib) are the ones allowed, each with a comment saying why.
_REFLECTION_ALLOWED = {
    "server/acceptor.py",  # socket.IPPROTO_IPV6 is missing on some platforms
    "server/fault_injection.py",  # field names of any generated request
    "apis/request_limits.py",  # every string field of any generated message
    "apis/share_v0_codec.py",  # fields named by a schema
    "apis/authorization.py",  # resets a response struct slot by slot
    # The shard protocol's optional hooks; the shard runtime's own modules.
    "server/runtime/shard_task.py", "server/runtime/coordinator_runtime.py",
}


def test_no_reflection_or_module_discovery_in_server_and_apis() -> None:
    """Handlers and the server reach their parts through typed attributes: no
    `hasattr`/`getattr` on our own objects, and no module found by name (`importlib`;
    the handler table is the literal, generated `apis/served.py`)."""
    found = []
    for rel, tree in SOURCES:
        if not rel.startswith(("server/", "apis/")):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("hasattr", "getattr")
                    and rel not in _REFLECTION_ALLOWED):
                found.append(f"{rel}:{node.lineno} {node.func.id}")
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                # import_ahead.py warms up a fixed list of modules on a worker thread at start-up.
                if any(n.split(".")[0] == "importlib" for n in names) and rel != "server/import_ahead.py":
                    found.append(f"{rel}:{node.lineno} importlib")
    assert found == [], f"reflection or module discovery: {found}"


_TOPICS_HOME = "logformat/internal_topics.py"
_INTERNAL_TOPIC_NAMES = {"__consumer_offsets", "__share_group_state", "__transaction_state",
                         "__group_events"}
# Modules the coordinator-runtime move rewrites; their copies go with that change.
_TOPIC_NAMES_PENDING: set[str] = set()


def test_internal_topic_names_are_spelled_once() -> None:
    """`__consumer_offsets` and the other internal topic names are literals only in
    `logformat/internal_topics.py` (docstrings and comments may name them)."""
    found = []
    for rel, tree in SOURCES:
        if rel == _TOPICS_HOME or rel in _TOPIC_NAMES_PENDING:
            continue
        docstrings = {id(n.value) for n in ast.walk(tree)
                      if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        found += [f"{rel}:{n.lineno} {n.value}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in _INTERNAL_TOPIC_NAMES
                  and id(n) not in docstrings]
    assert found == [], f"internal topic names outside {_TOPICS_HOME}: {found}"


def test_request_header_class_is_defined_once() -> None:
    found = [f"{rel}:{node.lineno}" for rel, tree in SOURCES for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.name == "RequestHeader"
             and rel != _REQUEST_HEADER_HOME]
    assert found == [], f"a second RequestHeader class: {found}"


def _names_in(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def test_api_versions_response_header_rule_is_stated_once() -> None:
    """"ApiVersions responses use header v0" is `wire.headers.response_header_flexible`:
    no other module combines an ApiVersions key test with a flexible-version test."""
    found = []
    for rel, tree in SOURCES:
        if rel == _REQUEST_HEADER_HOME:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.BoolOp | ast.IfExp):
                names = _names_in(node)
                if (any("API_VERSIONS" in n for n in names)
                        and any("flexible" in n.lower() for n in names)):
                    found.append(f"{rel}:{node.lineno}")
    assert found == [], f"the ApiVersions header rule restated: {found}"
