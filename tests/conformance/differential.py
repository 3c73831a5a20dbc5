"""Run one scenario against both brokers and compare the two transcripts step by step.

Apache Kafka runs first: a scenario that fails there is a wrong scenario, not a finding, and
is reported as such. A scenario compared on several groupcoord peers (one broker, a cluster)
runs on Kafka once: `KafkaTranscripts` keeps Kafka's transcript by scenario name for the
session. A difference names the step, the field paths that differ, and both normalised
values. With CONFORMANCE_TRANSCRIPTS=<dir> the transcripts are written there.
"""

from __future__ import annotations

import os
import pprint
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.conversation import Conversation
from conformance.normalise import Tree
from conformance.routing import ClusterRoutes

Scenario = Callable[[Conversation], None]
Transcript = list[tuple[str, Tree]]
# Set to a directory to keep both normalised transcripts of every scenario (for reading).
TRANSCRIPTS_ENV = "CONFORMANCE_TRANSCRIPTS"


@dataclass(frozen=True)
class Endpoint:
    broker: str
    host: str
    port: int  # the bootstrap broker's
    # A cluster: each request is sent to the node a client would send it to (`routing`).
    routed: bool = False


def run_scenario(endpoint: Endpoint, name: str, scenario: Scenario) -> Transcript:
    routes = ClusterRoutes(endpoint.host, endpoint.port) if endpoint.routed else None
    conversation = Conversation(endpoint.broker, endpoint.host, endpoint.port, name, routes)
    try:
        scenario(conversation)
    finally:
        conversation.close()
    return conversation.transcript


def field_differences(ours: Tree, theirs: Tree, path: str = "") -> list[str]:
    """Paths where two normalised trees differ, with both values."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in sorted(set(ours) | set(theirs)):
            out += field_differences(ours.get(key), theirs.get(key), f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        out = []
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += field_differences(a, b, f"{path}[{index}]")
        return out
    if ours != theirs:
        return [f"{path or '.'}: kafka={theirs!r} groupcoord={ours!r}"]
    return []


def compare(kafka: Transcript, ours: Transcript) -> None:
    kafka_steps = [step for step, _ in kafka]
    our_steps = [step for step, _ in ours]
    if kafka_steps != our_steps:
        raise AssertionError(f"steps differ:\n kafka      {kafka_steps}\n groupcoord {our_steps}")
    for (step, theirs), (_, mine) in zip(kafka, ours, strict=True):
        differences = field_differences(mine, theirs)
        if differences:
            raise AssertionError(
                f"step {step!r} differs:\n  " + "\n  ".join(differences)
                + f"\nkafka:\n{pprint.pformat(theirs)}\ngroupcoord:\n{pprint.pformat(mine)}")


def kafka_transcript(kafka: Endpoint, name: str, scenario: Scenario) -> Transcript:
    try:
        transcript = run_scenario(kafka, name, scenario)
    except AssertionError as exc:
        raise AssertionError(f"the scenario itself fails against Apache Kafka: {exc}") from exc
    _dump(name, kafka, transcript)
    return transcript


class KafkaTranscripts:
    """Kafka's transcript of each scenario, by name: a scenario compared on several peers
    (under the same name, so it names the same groups and topics on each) runs on Kafka
    once; one that failed there is told so again for each peer."""

    def __init__(self, kafka: Endpoint) -> None:
        self._kafka = kafka
        self._transcripts: dict[str, Transcript] = {}
        self._failures: dict[str, str] = {}

    def of(self, name: str, scenario: Scenario) -> Transcript:
        if name in self._failures:
            raise AssertionError(self._failures[name])
        if name not in self._transcripts:
            try:
                self._transcripts[name] = kafka_transcript(self._kafka, name, scenario)
            except AssertionError as exc:
                self._failures[name] = str(exc)
                raise
        return self._transcripts[name]


def compare_on(theirs: Transcript, ours: Endpoint, name: str, scenario: Scenario) -> None:
    """Run the scenario on `ours` and compare with Kafka's transcript."""
    mine = run_scenario(ours, name, scenario)
    _dump(name, ours, mine)
    compare(theirs, mine)


def run_both(kafka: Endpoint, ours: Endpoint, name: str, scenario: Scenario) -> None:
    compare_on(kafka_transcript(kafka, name, scenario), ours, name, scenario)


def _dump(name: str, endpoint: Endpoint, transcript: Transcript) -> None:
    dump = os.environ.get(TRANSCRIPTS_ENV)
    if dump:
        path = Path(dump, f"{name}.{endpoint.broker}.txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"## {step}\n{pprint.pformat(tree)}\n"
                                for step, tree in transcript))
