"""The four clients configured for TLS and SASL, and what each reports when its SASL
credentials are refused.

`ClientSecurity` holds one connection's security settings and renders them in each client's
own vocabulary (librdkafka properties, kafka-python / aiokafka keyword arguments, Java client
configs with a PEM truststore and a JAAS line); `adapter(name, security)` gives the usual
interop adapter (`helpers.clients`, `helpers.java`) with those settings. `auth_failure`
makes one client try to produce with refused credentials and returns the error text the
client surfaced, for the test to compare with Kafka's SASL_AUTHENTICATION_FAILED message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.clients import AiokafkaAdapter, ClientAdapter, ConfluentAdapter, KafkaPythonAdapter
from helpers.java import JavaAdapter, run_harness

JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
FAILURE_WAIT_S = 20.0


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str  # SSL, SASL_SSL, SASL_PLAINTEXT
    ca: Path | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    def confluent(self) -> dict[str, Any]:
        config: dict[str, Any] = {"security.protocol": self.protocol}
        if self.ca is not None:
            config["ssl.ca.location"] = str(self.ca)
        if self.mechanism:
            config.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username,
                           "sasl.password": self.password})
        return config

    def kafka_python(self) -> dict[str, Any]:
        config: dict[str, Any] = {"security_protocol": self.protocol}
        if self.ca is not None:
            config["ssl_cafile"] = str(self.ca)
        if self.mechanism:
            config.update({"sasl_mechanism": self.mechanism,
                           "sasl_plain_username": self.username,
                           "sasl_plain_password": self.password})
        return config

    def aiokafka(self) -> dict[str, Any]:
        from aiokafka.helpers import create_ssl_context

        config = self.kafka_python()
        cafile = config.pop("ssl_cafile", None)
        if cafile is not None:
            config["ssl_context"] = create_ssl_context(cafile=cafile)
        return config

    def java(self) -> dict[str, str]:
        props = {"security.protocol": self.protocol}
        if self.ca is not None:
            props.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca)})
        if self.mechanism:
            props["sasl.mechanism"] = self.mechanism
            props["sasl.jaas.config"] = (f'{JAAS_MODULES[self.mechanism]} required '
                                         f'username="{self.username}" '
                                         f'password="{self.password}";')
        return props


def adapter(client: str, security: ClientSecurity) -> ClientAdapter:
    if client == "confluent":
        return ConfluentAdapter(security.confluent())
    if client == "kafka-python":
        return KafkaPythonAdapter(security.kafka_python())
    if client == "aiokafka":
        return AiokafkaAdapter(security.aiokafka())
    return JavaAdapter(security.java())


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def auth_failure(client: str, bootstrap: str, security: ClientSecurity, topic: str) -> str:
    """Try to produce one record with `security`; return what the client reported."""
    if client == "confluent":
        return _confluent_failure(bootstrap, security, topic)
    if client == "java":
        run = run_harness("produce", bootstrap, "--topic", topic, "--count", "1",
                          "--base-ts", str(int(time.time() * 1000)),
                          *[arg for k, v in security.java().items()
                            for arg in ("--prop", f"{k}={v}")],
                          "--prop", "max.block.ms=10000", "--prop", "delivery.timeout.ms=10000",
                          "--prop", "request.timeout.ms=5000", expect=(0, 1))
        errors = [str(e.get("message")) for e in run.of("error")]
        errors += [str(e.get("firstError")) for e in run.of("produced") if e.get("failed")]
        return " | ".join(errors)
    collector = _Collect()
    logger = logging.getLogger("kafka" if client == "kafka-python" else "aiokafka")
    logger.addHandler(collector)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        if client == "kafka-python":
            _kafka_python_attempt(bootstrap, security, topic)
        else:
            asyncio.run(_aiokafka_attempt(bootstrap, security, topic))
    except Exception as exc:  # noqa: BLE001 - the failure is what is being observed
        collector.lines.append(f"raised {type(exc).__name__}: {exc}")
    finally:
        logger.removeHandler(collector)
        logger.setLevel(previous)
    return " | ".join(collector.lines)


def _confluent_failure(bootstrap: str, security: ClientSecurity, topic: str) -> str:
    from confluent_kafka import KafkaError, Producer

    seen: list[str] = []

    def on_error(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            seen.append(f"_AUTHENTICATION: {error.str()}")

    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": on_error,
                         **security.confluent()})
    producer.produce(topic, b"never delivered")
    deadline = time.monotonic() + FAILURE_WAIT_S
    while not seen and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(1)
    return " | ".join(seen)


def _kafka_python_attempt(bootstrap: str, security: ClientSecurity, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, bootstrap_timeout_ms=3_000,
                             **security.kafka_python())
    try:
        producer.send(topic, b"never delivered").get(timeout=10)
    finally:
        producer.close(timeout=1)


async def _aiokafka_attempt(bootstrap: str, security: ClientSecurity, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000,
                                **security.aiokafka())
    try:
        await producer.start()
        await producer.send_and_wait(topic, b"never delivered")
    finally:
        await producer.stop()
