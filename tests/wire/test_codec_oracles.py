"""Byte-for-byte agreement with independent codecs: kio 0.6.5, kafka-python 3.0.12 and, for
the versions neither knows (Kafka 4.4's additions), Kafka 4.4's own generated Java classes.

For random instances of every request and response at every version, our encoding is read by
the oracle (which must consume exactly all of it) and written again by the oracle; the
oracle's bytes must equal ours. Our decoder must read the oracle's bytes back to an equal
object. The oracles are test-only dependencies; the Java one is `java/KafkaCodecOracle.java`
run against the reference broker's libs (`make reference`).
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from wire_strategies import Case, instance, message_versions

kio_index = pytest.importorskip("kio.index")
kio_serial = pytest.importorskip("kio.serial")
kafka_protocol = pytest.importorskip("kafka.protocol")

API_CASES = [(c, v) for c, v in message_versions() if c.spec.kind in ("request", "response")]
KAFKA_LIBS = Path(__file__).resolve().parents[2] / ".cache" / "kafka-4.4.0" / "libs"
JAVA_ORACLE = Path(__file__).resolve().parent / "java" / "KafkaCodecOracle.java"
SETTINGS = settings(max_examples=2, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def _kio_schema(case: Case, version: int) -> Any:
    load = (kio_index.load_request_schema if case.spec.kind == "request"
            else kio_index.load_response_schema)
    try:
        return load(case.spec.api_key, version)
    except kio_index.KioIndexError:  # kio does not know this api/version
        return None


@cache
def _kafka_python_classes() -> dict[str, Any]:
    from kafka.protocol.api_message import ApiMessage

    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # optional modules of kafka-python may not import here
            module = None
        for obj in vars(module).values() if module is not None else ():
            if (inspect.isclass(obj) and issubclass(obj, ApiMessage) and obj is not ApiMessage
                    and getattr(obj, "_json", None)):
                found[obj._json["name"]] = obj
    return found


class JavaOracle:
    """One long-lived `KafkaCodecOracle` process: a line of hex in, Kafka's re-encoding out."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{KAFKA_LIBS}/*", str(JAVA_ORACLE)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def reencode(self, name: str, version: int, ours: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{name} {version} {ours.hex()}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        assert answer.startswith("OK "), f"Kafka's {name}Data v{version}: {answer!r}"
        return bytes.fromhex(answer[3:])


@pytest.fixture(scope="module")
def java_oracle() -> Any:
    assert shutil.which("java"), "java not found (Java 17+ is required)"
    assert KAFKA_LIBS.is_dir(), f"{KAFKA_LIBS} missing: run `make reference`"
    oracle = JavaOracle()
    yield oracle
    oracle.process.kill()
    oracle.process.wait()


def _kio_check(schema: Any, ours: bytes) -> bytes:
    """kio reads all of ``ours`` and writes it back; returns kio's bytes."""
    theirs, size = kio_serial.entity_reader(schema)(ours, 0)
    assert size == len(ours)
    out = io.BytesIO()
    kio_serial.entity_writer(schema)(out, theirs)
    return out.getvalue()


def _kafka_python_check(cls: Any, name: str, obj: Any, version: int) -> tuple[bytes, bytes]:
    """kafka-python reads and rewrites our bytes; returns (ours, theirs)."""
    if name == "ApiVersionsResponse":
        # kafka-python reads an errored ApiVersionsResponse as v0 (the client's fallback for
        # UNSUPPORTED_VERSION), so only error-free bodies are comparable.
        obj.error_code = 0
    ours = obj.encode(version)
    theirs = cls.decode(ours, version=version)
    theirs._header = None  # decode() leaves it unset; encode() reads it
    return ours, bytes(theirs.encode(version=version))


def _kafka_python_cls(case: Case, version: int) -> Any:
    cls = _kafka_python_classes().get(case.spec.name)
    return cls if cls is not None and version <= cls.max_version else None


JAVA_CASES = [(c, v) for c, v in API_CASES
              if _kio_schema(c, v) is None and _kafka_python_cls(c, v) is None]
PYTHON_CASES = [cv for cv in API_CASES if cv not in JAVA_CASES]


@pytest.mark.parametrize(("case", "version"), PYTHON_CASES,
                         ids=[f"{c.id}-v{v}" for c, v in PYTHON_CASES])
def test_oracles_agree(case: Case, version: int) -> None:
    schema = _kio_schema(case, version)
    kp_cls = _kafka_python_cls(case, version)

    @SETTINGS
    @given(obj=instance(case, version))
    def check(obj: Any) -> None:
        if schema is not None:
            ours = obj.encode(version)
            assert _kio_check(schema, ours) == ours
        if kp_cls is not None:
            ours, theirs = _kafka_python_check(kp_cls, case.spec.name, obj, version)
            assert theirs == ours
            assert case.cls.decode(theirs, 0, version)[0] == obj

    check()


@pytest.mark.parametrize(("case", "version"), JAVA_CASES,
                         ids=[f"{c.id}-v{v}" for c, v in JAVA_CASES])
def test_kafka_java_classes_agree(case: Case, version: int, java_oracle: JavaOracle) -> None:
    @SETTINGS
    @given(obj=instance(case, version))
    def check(obj: Any) -> None:
        ours = obj.encode(version)
        theirs = java_oracle.reencode(case.spec.name, version, ours)
        assert theirs == ours
        assert case.cls.decode(theirs, 0, version)[0] == obj

    check()


def test_oracle_coverage() -> None:
    """Every api/version meets an oracle, and the Python ones cover nearly all of them
    (guards against a silently skipped suite)."""
    kio_known = sum(_kio_schema(c, v) is not None for c, v in API_CASES)
    kp_known = sum(c.spec.name in _kafka_python_classes() for c, _ in API_CASES)
    assert len(PYTHON_CASES) + len(JAVA_CASES) == len(API_CASES)
    assert kio_known > len(API_CASES) * 0.95
    assert kp_known > len(API_CASES) // 2
