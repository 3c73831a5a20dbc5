"""Capture golden wire frames from real Kafka clients talking to a groupcoord broker.

Usage (from the repository root, with the test dependencies installed):

    python tools/capture_golden.py [--clients confluent-kafka,kafka-python,aiokafka,java,java-3.9]

A broker (`python -m groupcoord serve`, free loopback port, temporary data dir) is started
behind the recording proxy of `tests/helpers/wire_capture.py`; the broker advertises the
proxy's address, so every connection a client opens goes through the proxy. Each client runs
short scenarios (produce, group consume and commit, admin calls). For every
(client, api, version, direction) one frame is kept, exactly as it crossed the wire (size
prefix included), in `tests/wire/golden/<client>/<api>_v<version>_<direction>.bin`, and
`tests/wire/golden/index.json` lists them with their sha256. Only loopback is used, and the
broker and proxy are stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "src"))

from helpers.broker import BrokerProcess, free_port
from helpers.wire_capture import CapturedFrame, WireCapture

from groupcoord.wire.api_keys import ApiKey

GOLDEN_DIR = REPO_ROOT / "tests" / "wire" / "golden"
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "java", "java-3.9")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS = 6
POLL_SECONDS = 30.0
# A kept frame is the largest one up to this size (so produce/fetch carry records), else the
# smallest one; the whole golden set must stay around a megabyte.
PREFERRED_FRAME_BYTES = 8192
TOTAL_CAP_BYTES = 1 << 20


def _values(prefix: str, count: int = RECORDS) -> list[tuple[bytes, bytes]]:
    return [(f"k{i}".encode(), f"{prefix}-{i}".encode()) for i in range(count)]


# -- confluent-kafka --------------------------------------------------------------------------


def _confluent_version() -> str:
    import confluent_kafka

    return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"


def _confluent_poll(conf: dict[str, Any], topic: str, want: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({**conf, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + POLL_SECONDS
    try:
        while got < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        if got:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    if got < want:
        raise RuntimeError(f"confluent-kafka consumer read {got} of {want} from {topic}")


def run_confluent(bootstrap: str) -> None:
    """Admin create/list/describe, a producer per codec, a classic and a consumer group."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = "golden-confluent", "golden-confluent-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                             "linger.ms": 5})
        for key, value in _values(codec):
            producer.produce(topic, key=key, value=value, headers=[("h", b"v")])
        if producer.flush(30) != 0:
            raise RuntimeError(f"confluent-kafka producer ({codec}) did not deliver")
    total = RECORDS * len(CODECS)
    _confluent_poll({"bootstrap.servers": bootstrap, "group.id": group}, topic, total)
    _confluent_poll({"bootstrap.servers": bootstrap, "group.id": f"{group}-848",
                     "group.protocol": "consumer"}, topic, total)
    admin.list_consumer_groups().result(30)
    admin.describe_consumer_groups([group])[group].result(30)


# -- kafka-python -----------------------------------------------------------------------------


def _kafka_python_version() -> str:
    import kafka

    return str(kafka.__version__)


def run_kafka_python(bootstrap: str) -> None:
    """Admin create/list/describe, a producer per codec, a group consumer with commit."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    topic, group = "golden-kafka-python", "golden-kafka-python-group"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
        for codec in CODECS:
            producer = KafkaProducer(bootstrap_servers=bootstrap,
                                     compression_type=None if codec == "none" else codec)
            futures = [producer.send(topic, key=k, value=v, headers=[("h", b"v")])
                       for k, v in _values(codec)]
            producer.flush(30)
            for future in futures:
                future.get(timeout=5)
            producer.close(timeout=10)
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                 enable_auto_commit=False, auto_offset_reset="earliest")
        got = 0
        deadline = time.monotonic() + POLL_SECONDS
        while got < RECORDS * len(CODECS) and time.monotonic() < deadline:
            got += sum(len(b) for b in consumer.poll(timeout_ms=500).values())
        consumer.commit()
        consumer.close()
        admin.list_groups()
        admin.describe_groups([group])
        admin.list_group_offsets(group)
    finally:
        admin.close()


# -- aiokafka ---------------------------------------------------------------------------------


def _aiokafka_version() -> str:
    import aiokafka

    return str(aiokafka.__version__)


async def _aiokafka_scenario(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic, group = "golden-aiokafka", "golden-aiokafka-group"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
        for codec in CODECS:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                        compression_type=None if codec == "none" else codec)
            await producer.start()
            try:
                for key, value in _values(codec):
                    await producer.send_and_wait(topic, value, key=key, headers=[("h", b"v")])
            finally:
                await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            got = 0
            deadline = time.monotonic() + POLL_SECONDS
            while got < RECORDS * len(CODECS) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                got += sum(len(b) for b in batches.values())
            await consumer.commit()
        finally:
            await consumer.stop()
        await admin.list_consumer_groups()
        await admin.describe_consumer_groups([group])
    finally:
        await admin.close()


def run_aiokafka(bootstrap: str) -> None:
    """Admin create/list/describe, a producer per codec, a group consumer with commit."""
    asyncio.run(_aiokafka_scenario(bootstrap))


# -- Java -------------------------------------------------------------------------------------


def _java_version(client: Any) -> str:
    with zipfile.ZipFile(client.jar_dir / client.clients_jar) as jar:
        props = jar.read("kafka/kafka-version.properties").decode()
    for line in props.splitlines():
        if line.startswith("version="):
            return line.split("=", 1)[1].strip()
    return "unknown"


def run_java(bootstrap: str, client: Any) -> None:
    """Harness create-topic, produce per codec, classic and consumer group, admin calls (the
    group admin modes only on the 4.x client, which has them)."""
    from helpers.java import CLIENT_3_9, run_harness

    suffix = "-39" if client is CLIENT_3_9 else ""
    topic, group = f"golden-java{suffix}", f"golden-java{suffix}-group"
    run_harness("create-topic", bootstrap, "--topic", topic, "--partitions", "3", client=client)
    for codec in CODECS:
        run_harness("produce", bootstrap, "--topic", topic, "--count", str(RECORDS),
                    "--base-ts", str(int(time.time() * 1000)), "--compression", codec,
                    client=client)
    total = str(RECORDS * len(CODECS))
    run_harness("consume-group", bootstrap, "--topic", topic, "--count", total,
                "--group", group, "--commit", "sync", "--timeout-ms", "30000", client=client)
    run_harness("consume-group", bootstrap, "--topic", topic, "--count", total,
                "--group", f"{group}-848", "--group-protocol", "consumer",
                "--commit", "sync", "--timeout-ms", "30000", client=client)
    if client is not CLIENT_3_9:
        run_harness("list-groups", bootstrap, client=client)
        run_harness("describe-groups", bootstrap, "--groups", group, client=client)
    run_harness("group-offsets", bootstrap, "--group", group, client=client)


def _java_scenario(name: str) -> tuple[Callable[[str], None], Callable[[], str]]:
    from helpers.java import CLIENT_3_9, CLIENT_4_4

    client = CLIENT_3_9 if name == "java-3.9" else CLIENT_4_4
    return (lambda bootstrap: run_java(bootstrap, client)), (lambda: _java_version(client))


SCENARIOS: dict[str, tuple[Callable[[str], None], Callable[[], str]]] = {
    "confluent-kafka": (run_confluent, _confluent_version),
    "kafka-python": (run_kafka_python, _kafka_python_version),
    "aiokafka": (run_aiokafka, _aiokafka_version),
    "java": _java_scenario("java"),
    "java-3.9": _java_scenario("java-3.9"),
}


# -- selection and output ---------------------------------------------------------------------


def api_name(api_key: int) -> str:
    """`join_group` for api key 11; `api_<n>` for a key this codec does not know."""
    try:
        return ApiKey(api_key).name.lower()
    except ValueError:
        return f"api_{api_key}"


def select_frames(frames: Iterable[CapturedFrame]) -> dict[tuple[int, int, str], bytes]:
    """One frame per (api key, version, direction): the largest up to the preferred size,
    else the smallest. Versions outside the codec's range are left out: the broker answered
    them UNSUPPORTED_VERSION in an older layout (the 4.4 client's first ApiVersions is v5)."""
    from groupcoord.wire.messages import REQUESTS

    chosen: dict[tuple[int, int, str], bytes] = {}
    for frame in frames:
        request = REQUESTS.get(frame.api_key)
        if request is None or not request.MIN_VERSION <= frame.api_version <= request.MAX_VERSION:
            continue
        key = (frame.api_key, frame.api_version, frame.direction)
        if key not in chosen or _better(frame.data, chosen[key]):
            chosen[key] = frame.data
    return chosen


def _better(candidate: bytes, current: bytes) -> bool:
    fits_new = len(candidate) <= PREFERRED_FRAME_BYTES
    fits_old = len(current) <= PREFERRED_FRAME_BYTES
    if fits_new != fits_old:
        return fits_new
    return len(candidate) > len(current) if fits_new else len(candidate) < len(current)


def write_client(client: str, version: str,
                 chosen: dict[tuple[int, int, str], bytes]) -> list[dict[str, Any]]:
    """Replace `golden/<client>/` with the chosen frames; returns their index entries."""
    target = GOLDEN_DIR / client
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    entries = []
    for (api_key, api_version, direction), data in sorted(chosen.items()):
        name = f"{api_name(api_key)}_v{api_version}_{direction}.bin"
        (target / name).write_bytes(data)
        entries.append({
            "client": client, "client_version": version, "api": api_name(api_key),
            "api_key": api_key, "version": api_version, "direction": direction,
            "file": f"{client}/{name}", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    return entries


def _load_index() -> list[dict[str, Any]]:
    path = GOLDEN_DIR / "index.json"
    return json.loads(path.read_text()) if path.is_file() else []


def write_index(entries: list[dict[str, Any]], replaced: set[str]) -> None:
    kept = [e for e in _load_index() if e["client"] not in replaced]
    merged = sorted(kept + entries, key=lambda e: (e["client"], e["api_key"], e["version"],
                                                   e["direction"]))
    (GOLDEN_DIR / "index.json").write_text(json.dumps(merged, indent=1) + "\n")
    total = sum(e["size"] for e in merged)
    if total > TOTAL_CAP_BYTES:
        raise SystemExit(f"golden frames total {total} bytes, over the {TOTAL_CAP_BYTES} cap")


def capture(clients: list[str]) -> None:
    """Run the scenarios of `clients` through the proxy and write their golden frames."""
    broker_port = free_port()
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp, \
            WireCapture(f"127.0.0.1:{broker_port}") as proxy:
        broker = BrokerProcess(Path(tmp) / "data", Path(tmp) / "broker.log", extra_args=[
            "--advertised-listener", proxy.address,
            "--group-initial-rebalance-delay-ms", "0", "--fsync", "never"])
        broker.port = broker_port
        broker.start()
        try:
            for client in clients:
                run, version_of = SCENARIOS[client]
                proxy.take()
                run(proxy.address)
                time.sleep(0.5)  # let closing clients' last responses cross the proxy
                frames = proxy.take()
                chosen = select_frames(frames)
                entries += write_client(client, version_of(), chosen)
                print(f"{client}: {len(frames)} frames, kept {len(chosen)}", flush=True)
        except BaseException:
            print(broker.log_tail(40), file=sys.stderr)
            raise
        finally:
            broker.stop()
    write_index(entries, set(clients))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help="comma-separated subset of " + ", ".join(CLIENTS))
    args = parser.parse_args(argv)
    clients = [c for c in args.clients.split(",") if c]
    unknown = set(clients) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown clients: {', '.join(sorted(unknown))}")
    capture(clients)


if __name__ == "__main__":
    main()
