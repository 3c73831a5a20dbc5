"""KIP-848 consumer groups with real clients: confluent-kafka (librdkafka 2.16, which sends
ConsumerGroupHeartbeat v1 with its own member id) and the Java 4.4 client (v1 as well,
with a member id of its own), both with `group.protocol=consumer`.

Members live in separate processes so that one can be killed with SIGKILL. Every member
prints JSON lines (`assigned`/`revoked`/`lost`, `records`, `committed`, `closed`), the same
protocol as the Java harness's `group-members` mode; running this file as a script with
`member ...` hosts one confluent-kafka member. After every membership change the test waits
for the group to be Stable and checks exclusive ownership: what each client believes it
owns equals what the broker says it owns (ConsumerGroupDescribe), the sets are disjoint and
cover every partition. At the end every acknowledged record has been consumed.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# Run as a script (a confluent-kafka member host), `helpers` is found through TESTS_DIR.
from helpers.broker import ONE_NODE, THREE_NODE_CLUSTER, BrokerFactory, BrokerProcess
from helpers.group_checks import coordinator_address
from helpers.postgres_cluster import cluster_bootstrap

pytestmark = pytest.mark.interop

PARTITIONS = 12
BROKER_ARGS = [
    "--group-initial-rebalance-delay-ms", "0",
    "--group-config", "group.consumer.min.session.timeout.ms=1000",
    "--group-config", "group.consumer.session.timeout.ms=4000",
    "--group-config", "group.consumer.min.heartbeat.interval.ms=100",
    "--group-config", "group.consumer.heartbeat.interval.ms=300",
    "--group-config", "group.consumer.regex.batch.refresh.min.interval.ms=0",
]
STABLE_TIMEOUT_S = 30.0
BROKER_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# Client logs go to a file named by the environment when debugging, else nowhere.
STDERR_SINK = open(os.environ["CG_CLIENT_LOG"], "a") if os.environ.get(  # noqa: SIM115
    "CG_CLIENT_LOG") else subprocess.DEVNULL


# -- one confluent-kafka member (run as a script) ------------------------------------------

def _emit(idx: int, ev: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"ev": ev, "m": idx, **fields}) + "\n")
    sys.stdout.flush()


def member_main(argv: list[str]) -> int:
    from confluent_kafka import Consumer, KafkaException

    opts = dict(zip(argv[0::2], argv[1::2], strict=True))
    idx = int(opts["--idx"])
    config: dict[str, Any] = {
        "bootstrap.servers": opts["--bootstrap"], "group.id": opts["--group"],
        "group.protocol": opts.get("--protocol", "consumer"), "client.id": f"m{idx}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    if opts.get("--assignor"):
        config["group.remote.assignor"] = opts["--assignor"]
    if opts.get("--instance-id"):
        config["group.instance.id"] = opts["--instance-id"]
    if config["group.protocol"] == "classic":
        # The default eager assignors: librdkafka's cooperative-sticky puts user data in
        # assignments, which (as in Kafka) makes a group ineligible for an online upgrade.
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer = Consumer(config)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()

    def parts(tps: list[Any]) -> list[int]:
        return sorted(tp.partition for tp in tps)

    # A topic starting with "^" is a regex: librdkafka sends it as SubscribedTopicRegex.
    consumer.subscribe([opts["--topic"]],
                       on_assign=lambda c, tps: _emit(idx, "assigned", parts=parts(tps)),
                       on_revoke=lambda c, tps: _emit(idx, "revoked", parts=parts(tps)),
                       on_lost=lambda c, tps: _emit(idx, "lost", parts=parts(tps)))
    while not stop.is_set():
        msgs = consumer.consume(200, 0.2)
        good = [m for m in msgs if not m.error()]
        if not good:
            continue
        _emit(idx, "records", recs=[[m.topic(), m.partition(), m.offset()] for m in good])
        try:
            consumer.commit(asynchronous=False)
            _emit(idx, "committed")
        except KafkaException as exc:  # a commit racing a revocation may fail; the
            _emit(idx, "commit_failed", error=str(exc))  # test only requires no loss
    consumer.close()
    _emit(idx, "closed")
    return 0


# -- the driver ------------------------------------------------------------------------------

class Host:
    """A process hosting members (one for confluent-kafka, several for a Java JVM)."""

    def __init__(self, cmd: list[str], events: queue.Queue[dict[str, Any]],
                 stdin_commands: bool) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=STDERR_SINK, text=True)
        self.stdin_commands = stdin_commands
        self.members: set[int] = set()
        threading.Thread(target=self._read, args=(events,), daemon=True).start()

    def _read(self, events: queue.Queue[dict[str, Any]]) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                events.put(json.loads(line))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


class Group:
    """Members of one group across hosts, and what each believes it owns."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str,
                 assignor: str = "") -> None:
        self.client, self.bootstrap, self.group, self.topic = client, bootstrap, group, topic
        self.assignor = assignor
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.owned: dict[int, set[tuple[str, int]] | set[int]] = {}
        self.hosts: dict[int, Host] = {}
        self.consumed: set[tuple[int, int]] = set()
        self.consumed_by_topic: set[tuple[str, int, int]] = set()
        self.closed: set[int] = set()
        self.java_host: Host | None = None

    def start(self, idx: int, own_host: bool = False, instance_id: str = "",
              protocol: str = "consumer") -> None:
        self.owned[idx] = set()
        self.closed.discard(idx)
        if self.client == "confluent":
            cmd = [sys.executable, __file__, "member", "--bootstrap", self.bootstrap,
                   "--group", self.group, "--topic", self.topic, "--idx", str(idx),
                   "--assignor", self.assignor, "--protocol", protocol]
            if instance_id:
                cmd += ["--instance-id", instance_id]
            self.hosts[idx] = Host(cmd, self.events, False)
            return
        if own_host or self.java_host is None:
            host = Host(self._java_cmd(), self.events, True)
            if not own_host:
                self.java_host = host
        else:
            host = self.java_host
        host.send(f"start {idx} {instance_id}".strip())
        self.hosts[idx] = host

    def _java_cmd(self) -> list[str]:
        from helpers import java

        assignor = ["--assignor", self.assignor] if self.assignor else []
        return [*java.harness_command("group-members"), "--bootstrap", self.bootstrap,
                "--topic", self.topic, "--group", self.group, "--group-protocol", "consumer",
                *assignor]

    def leave(self, idx: int) -> None:
        host = self.hosts.pop(idx)
        host.send(f"leave {idx}" if host.stdin_commands else "leave")
        self._wait(lambda: idx in self.closed, f"member {idx} to close")
        self.owned.pop(idx, None)
        if host.stdin_commands and host is not self.java_host:
            host.send("exit")  # a JVM of its own: nothing else runs in it
        if host is not self.java_host:
            host.proc.wait(30)

    def kill(self, idx: int) -> None:
        host = self.hosts.pop(idx)
        host.kill()
        self.owned.pop(idx, None)

    def stop_all(self) -> None:
        """Close every member gracefully; one that does not close in time is killed."""
        for idx in list(self.hosts):
            host = self.hosts[idx]
            try:
                self.leave(idx)
            except AssertionError:
                host.kill()
        if self.java_host is not None and self.java_host.proc.poll() is None:
            self.java_host.send("exit")
            self.java_host.proc.wait(30)

    def drain(self) -> None:
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            self._apply(ev)

    def _apply(self, ev: dict[str, Any]) -> None:
        idx, kind = ev["m"], ev["ev"]
        if kind == "records":  # a departed member's late lines still count as consumed
            for rec in ev["recs"]:
                self.consumed.add((rec[-2], rec[-1]))
                if len(rec) == 3:
                    self.consumed_by_topic.add(tuple(rec))
        if idx not in self.owned and kind != "closed":
            return  # a killed or departed member's late ownership lines
        if kind == "assigned":
            self.owned[idx] |= set(ev["parts"])
        elif kind in ("revoked", "lost"):
            self.owned[idx] -= set(ev["parts"])
        elif kind == "closed":
            self.closed.add(idx)

    def _wait(self, cond: Any, what: str, timeout: float = STABLE_TIMEOUT_S,
              detail: Any = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.drain()
            if cond():
                return
            time.sleep(0.05)
        extra = detail() if detail is not None else ""
        raise AssertionError(f"timed out waiting for {what}; owned={self.owned} {extra}")

    def wait_stable(self, expected: int) -> None:
        """Stable on the broker, clients agree with it, ownership exclusive and complete."""
        state: dict[str, Any] = {}

        def check() -> bool:
            described = describe(self.bootstrap, self.group)
            state["last"] = described
            if described["state"] != "Stable" or len(described["members"]) != expected:
                return False
            by_client = {m["client_id"]: set(m["assignment"]) for m in described["members"]}
            mine = {f"m{i}": set(p) for i, p in self.owned.items()}
            return by_client == mine
        self._wait(check, f"a stable group of {expected}")
        owned = [set(p) for p in self.owned.values()]
        union: set[int] = set().union(*owned) if owned else set()
        assert sum(len(p) for p in owned) == len(union) == PARTITIONS, self.owned


def describe(bootstrap: str, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe over the wire: state and each member's owned partitions."""
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated.consumer_group_describe import ConsumerGroupDescribeRequest

    with WireClient(coordinator_address(bootstrap, group), timeout_s=10) as client:
        resp, _ = client.request(ConsumerGroupDescribeRequest(group_ids=[group]), 1)
    g = resp.groups[0]
    return {"state": g.group_state, "epoch": g.group_epoch, "members": [
        {"client_id": m.client_id, "member_id": m.member_id, "epoch": m.member_epoch,
         "assignment": [p for tp in m.assignment.topic_partitions for p in tp.partitions]}
        for m in g.members]}


class Feeder:
    """Produces to the topic in the background; records which (partition, offset) acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.acked: set[tuple[int, int]] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _ack(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add((msg.partition(), msg.offset()))

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, key=str(i).encode(), value=b"v%d" % i,
                                  on_delivery=self._ack)
            i += 1
            self.producer.poll(0.005)
        self.producer.flush(10)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(20)
        self.producer = None  # closes it: no reconnect noise after the broker stops


def run_scenario(broker: Any, client: str, assignor: str, tmp_group: str) -> None:
    from helpers.confluent_io import create_topic

    topic = f"t-{tmp_group}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    feeder = Feeder(broker.bootstrap, topic)
    group = Group(client, broker.bootstrap, tmp_group, topic, assignor)
    try:
        group.start(0)
        group.wait_stable(1)
        member_id = describe(broker.bootstrap, tmp_group)["members"][0]["member_id"]
        # Both clients send v1 with an id of their own (KIP-1082; base64, not the broker's
        # UUID form, which only a v0 client with an empty id would get).
        assert not BROKER_UUID.fullmatch(member_id), member_id
        group.start(1)
        group.start(2, own_host=True)  # its own process, so it can be killed alone
        group.wait_stable(3)
        for idx in range(3, 8):
            group.start(idx)
        group.wait_stable(8)
        for idx in range(7, 2, -1):
            group.leave(idx)
        group.wait_stable(3)
        group.kill(2)
        group.wait_stable(2)
        feeder.finish()
        group._wait(lambda: feeder.acked <= group.consumed, "every acked record consumed",
                    timeout=60, detail=lambda: sorted(feeder.acked - group.consumed)[:20])
    finally:
        feeder.finish()
        group.stop_all()


@pytest.fixture
def protocol_broker(broker_factory: BrokerFactory, request: pytest.FixtureRequest
                    ) -> BrokerProcess:
    """A broker of the test's own with BROKER_ARGS, or the three-node cluster's bootstrap
    node (which has them too)."""
    if request.param == THREE_NODE_CLUSTER:
        return cluster_bootstrap(request)
    return broker_factory.create(BROKER_ARGS)


# Each assignor on one node; the uniform one on the three-node cluster as well.
RUNS = [("uniform", ONE_NODE), ("range", ONE_NODE), ("uniform", THREE_NODE_CLUSTER)]
RUN_IDS = [a + ("" if kind == ONE_NODE else f"-{kind}") for a, kind in RUNS]


@pytest.mark.parametrize(("assignor", "protocol_broker"), RUNS, indirect=["protocol_broker"],
                         ids=RUN_IDS)
def test_confluent_consumer_protocol(protocol_broker: BrokerProcess, assignor: str) -> None:
    run_scenario(protocol_broker, "confluent", assignor, f"cf-{assignor}")


def _skip_without_java(client: str) -> None:
    from helpers import java

    reason = java.unavailable_reason() if client == "java" else None
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize(("assignor", "protocol_broker"), RUNS, indirect=["protocol_broker"],
                         ids=RUN_IDS)
def test_java_consumer_protocol(protocol_broker: BrokerProcess, assignor: str) -> None:
    _skip_without_java("java")
    run_scenario(protocol_broker, "java", assignor, f"java-{assignor}")


def test_confluent_regex_picks_up_new_topic(broker_factory: Any) -> None:
    """SubscribedTopicRegex: a topic created after the members joined is assigned and read."""
    from confluent_kafka import Producer
    from helpers.confluent_io import create_topic

    broker = broker_factory.create(BROKER_ARGS)
    create_topic(broker.bootstrap, "rx-a", 6)
    group = Group("confluent", broker.bootstrap, "rx-group", "^rx-.*")
    try:
        group.start(0)
        group.start(1)
        group._wait(lambda: _stable_total(broker.bootstrap, "rx-group", 2, 6), "6 partitions")
        create_topic(broker.bootstrap, "rx-b", 6)
        group._wait(lambda: _stable_total(broker.bootstrap, "rx-group", 2, 12), "12 partitions")
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(60):
            producer.produce("rx-b", value=b"%d" % i, partition=i % 6)
        producer.flush(10)
        group._wait(lambda: len({r for r in group.consumed_by_topic if r[0] == "rx-b"}) == 60,
                    "the new topic's records")
    finally:
        group.stop_all()


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_static_member_returns_to_its_partitions(broker_factory: Any, client: str) -> None:
    """A static member that closes (epoch -2) and restarts under the same instance id gets
    its partitions back without a group epoch bump."""
    from helpers.confluent_io import create_topic

    _skip_without_java(client)
    broker = broker_factory.create(BROKER_ARGS)
    create_topic(broker.bootstrap, "t-static", PARTITIONS)
    group = Group(client, broker.bootstrap, "static-group", "t-static")
    try:
        group.start(0, instance_id="s0")
        group.start(1, instance_id="s1")
        group.wait_stable(2)
        before = describe(broker.bootstrap, "static-group")
        mine = set(group.owned[0])
        group.leave(0)
        during = describe(broker.bootstrap, "static-group")
        assert during["epoch"] == before["epoch"] and len(during["members"]) == 2
        assert [m["epoch"] for m in during["members"] if m["client_id"] == "m0"] == [-2]
        group.start(0, instance_id="s0")
        group.wait_stable(2)
        assert describe(broker.bootstrap, "static-group")["epoch"] == before["epoch"]
        assert group.owned[0] == mine
    finally:
        group.stop_all()


def test_cli_describes_consumer_group(broker_factory: Any) -> None:
    """`groupcoord groups describe --members`: epochs, state, current vs target."""
    from helpers.confluent_io import create_topic

    broker = broker_factory.create(BROKER_ARGS)
    create_topic(broker.bootstrap, "t-cli", 4)
    group = Group("confluent", broker.bootstrap, "cli-group", "t-cli")
    try:
        group.start(0)
        group.start(1)
        group._wait(lambda: _stable_total(broker.bootstrap, "cli-group", 2, 4), "stable")
        out = _groups_cli(broker.bootstrap, "describe", "cli-group", "--members", "--json")
        data = json.loads(out)
        assert data["type"] == "consumer" and data["state"] == "Stable"
        members = sorted(data["members"], key=lambda m: m["client_id"])
        assert [m["client_id"] for m in members] == ["m0", "m1"]
        for m in members:
            assert m["member_epoch"] == data["assignment_epoch"] == data["group_epoch"]
            assert m["assignment"] == m["target_assignment"] and len(m["assignment"]) == 2
            assert (m["reconciliation"], m["protocol"]) == ("STABLE", "consumer")
        table = _groups_cli(broker.bootstrap, "describe", "cli-group", "--members")
        assert "MEMBER-EPOCH" in table and "TARGET-ASSIGNMENT" in table and "t-cli:" in table
        state = _groups_cli(broker.bootstrap, "describe", "cli-group", "--state")
        assert "GROUP-EPOCH" in state and "uniform" in state
    finally:
        group.stop_all()


def _groups_cli(bootstrap: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=30, check=True,
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR.parent / "src")})
    return result.stdout


def _stable_total(bootstrap: str, group: str, members: int, partitions: int) -> bool:
    described = describe(bootstrap, group)
    return described["state"] == "Stable" and len(described["members"]) == members and \
        sum(len(m["assignment"]) for m in described["members"]) == partitions


def test_broker_killed_during_rebalance(broker_factory: Any) -> None:
    """kill -9 while a member joins: after the restart the group recovers from the log,
    members continue (or are fenced and rejoin) and ownership stays exclusive."""
    from helpers.confluent_io import create_topic

    broker = broker_factory.create(BROKER_ARGS + ["--fsync", "always"])
    topic = "t-restart"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    feeder = Feeder(broker.bootstrap, topic)
    group = Group("confluent", broker.bootstrap, "restart-group", topic)
    try:
        for idx in range(3):
            group.start(idx)
        group.wait_stable(3)
        before = describe(broker.bootstrap, "restart-group")["epoch"]
        group.start(3)
        group._wait(lambda: describe(broker.bootstrap, "restart-group")["epoch"] > before,
                    "the rebalance to start")
        during = describe(broker.bootstrap, "restart-group")
        broker.kill()
        broker.start()
        # The group comes back from the log: the epochs written before the kill survive.
        assert describe(broker.bootstrap, "restart-group")["epoch"] >= during["epoch"]
        group.wait_stable(4)
        feeder.finish()
        group._wait(lambda: feeder.acked <= group.consumed, "every acked record consumed",
                    timeout=60, detail=lambda: sorted(feeder.acked - group.consumed)[:20])
    finally:
        feeder.finish()
        group.stop_all()


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "member":
    sys.exit(member_main(sys.argv[2:]))
