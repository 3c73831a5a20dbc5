"""Consumer-group admin calls of the Java AdminClient and confluent-kafka's AdminClient,
normalised to the same Python values so one set of expectations checks both.

- `list_groups(states)` -> {group: (state, is_simple)}; states are Kafka's names ("Stable").
- `describe(groups)` -> {group: {"state", "assignor", "simple", "members": [(client_id,
  host, instance_id, sorted partitions)]}} or {group: {"error": NAME}}.
- `offsets(group)` -> {(topic, partition): offset}.
- `delete_offsets(group, topic, partitions)` -> {partition: None | NAME} (Java only:
  `can_delete_offsets` says whether the client has the call).
- `delete_groups(groups)` -> {group: None | NAME}.

NAME is Kafka's error name (`NON_EMPTY_GROUP`, ...), whichever way the client reports it.
"""

from __future__ import annotations

from typing import Any

from helpers.java import run_harness

# Java admin exceptions -> the Kafka error each stands for.
JAVA_ERRORS = {
    "GroupNotEmptyException": "NON_EMPTY_GROUP",
    "GroupIdNotFoundException": "GROUP_ID_NOT_FOUND",
    "GroupSubscribedToTopicException": "GROUP_SUBSCRIBED_TO_TOPIC",
    "UnknownTopicOrPartitionException": "UNKNOWN_TOPIC_OR_PARTITION",
}
TIMEOUT_S = 30


class JavaGroupAdmin:
    """The 4.4 Admin client through the harness modes in kafka4/GroupAdmin.java."""

    name = "java"
    can_delete_offsets = True

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def list_groups(self, states: list[str]) -> dict[str, tuple[str, bool]]:
        run = run_harness("list-groups", self.bootstrap, "--states", ",".join(states))
        return {e["groupId"]: (e["state"], e["simple"]) for e in run.of("group")}

    def describe(self, groups: list[str]) -> dict[str, dict[str, Any]]:
        run = run_harness("describe-groups", self.bootstrap, "--groups", ",".join(groups))
        out: dict[str, dict[str, Any]] = {}
        for e in run.of("described"):
            if "error" in e:
                out[e["groupId"]] = {"error": JAVA_ERRORS.get(e["error"], e["error"])}
                continue
            members = sorted((m["clientId"], m["host"], m["instanceId"],
                              sorted(tuple(tp) for tp in m["assignment"]))
                             for m in e["members"])
            out[e["groupId"]] = {"state": e["state"], "assignor": e["assignor"],
                                 "simple": e["simple"], "members": members}
        return out

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        run = run_harness("group-offsets", self.bootstrap, "--group", group)
        return {(e["topic"], e["partition"]): e["offset"] for e in run.of("offset")}

    def delete_offsets(self, group: str, topic: str, partitions: list[int]
                       ) -> dict[int, str | None]:
        run = run_harness("delete-group-offsets", self.bootstrap, "--group", group,
                          "--topic", topic, "--partitions", ",".join(map(str, partitions)))
        return {e["partition"]: _java_error(e["error"]) for e in run.of("offset-deleted")}

    def delete_groups(self, groups: list[str]) -> dict[str, str | None]:
        run = run_harness("delete-groups", self.bootstrap, "--groups", ",".join(groups))
        return {e["groupId"]: _java_error(e["error"]) for e in run.of("group-deleted")}


def _java_error(name: str | None) -> str | None:
    return None if name is None else JAVA_ERRORS.get(name, name)


class ConfluentGroupAdmin:
    """confluent-kafka's AdminClient (librdkafka)."""

    name = "confluent"
    # confluent-kafka's Python AdminClient has no delete_consumer_group_offsets (2.16.1).
    can_delete_offsets = False

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def list_groups(self, states: list[str]) -> dict[str, tuple[str, bool]]:
        from confluent_kafka import ConsumerGroupState

        wanted = {ConsumerGroupState[_enum_name(s)] for s in states}
        result = self.admin.list_consumer_groups(states=wanted).result(TIMEOUT_S)
        assert not result.errors, result.errors
        return {g.group_id: (_state_name(g.state), g.is_simple_consumer_group)
                for g in result.valid}

    def describe(self, groups: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for group, future in self.admin.describe_consumer_groups(groups).items():
            try:
                d = future.result(TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - KafkaException carries the error
                out[group] = {"error": _confluent_error(exc)}
                continue
            members = sorted((m.client_id, m.host, m.group_instance_id,
                              sorted((tp.topic, tp.partition)
                                     for tp in m.assignment.topic_partitions))
                             for m in d.members)
            out[group] = {"state": _state_name(d.state), "assignor": d.partition_assignor,
                          "simple": d.is_simple_consumer_group, "members": members}
        return out

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
        result = futures[group].result(TIMEOUT_S)
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}

    def delete_groups(self, groups: list[str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for group, future in self.admin.delete_consumer_groups(groups).items():
            try:
                future.result(TIMEOUT_S)
                out[group] = None
            except Exception as exc:  # noqa: BLE001 - KafkaException carries the error
                out[group] = _confluent_error(exc)
        return out


# Kafka's state names -> confluent's ConsumerGroupState member names.
CONFLUENT_STATES = {"Stable": "STABLE", "Empty": "EMPTY", "Dead": "DEAD",
                    "PreparingRebalance": "PREPARING_REBALANCING",
                    "CompletingRebalance": "COMPLETING_REBALANCING"}


def _enum_name(state: str) -> str:
    return CONFLUENT_STATES[state]


def _state_name(state: Any) -> str:
    """confluent's ConsumerGroupState member -> Kafka's state name ("Stable")."""
    names = {v: k for k, v in CONFLUENT_STATES.items()}
    return names.get(state.name, state.name)


def _confluent_error(exc: Exception) -> str:
    err: Any = exc.args[0] if exc.args else None
    return str(err.name()) if hasattr(err, "name") else f"{type(exc).__name__}: {exc}"
