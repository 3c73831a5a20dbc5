"""The groupcoord pytest plugin, loaded through the `pytest11` entry point.

Fixtures:
- `groupcoord_broker`: one in-process broker for the whole session (cheap per test; tests
  keep apart by using `unique_topic` and `unique_group`).
- `groupcoord_fresh_broker`: a broker of its own for one test, stopped after it (its logs,
  in memory unless a `data_dir` is given, go with it). `@pytest.mark.groupcoord(...)` passes keyword arguments to
  `KafkaBroker` for that test, e.g. `clock="manual"` or `subprocess=True`.
- `unique_topic`, `unique_group`: names derived from the test's name plus a random suffix,
  legal as Kafka topic and group names.

- `groupcoord_cluster`: a broker serving N nodes (`--groupcoord-nodes`, default 3) for one
  test, with `move_group_coordinator`, `stop_node` and `start_node`.

Option `--groupcoord-clock=system|manual` picks the clock of the broker fixtures (a marker's
`clock` wins for a fresh broker or cluster). Nothing here imports the broker until a fixture is used,
so a suite that never asks for one pays nothing for the plugin.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from groupcoord.testing.broker import KafkaBroker

CLOCK_OPTION = "--groupcoord-clock"
NODES_OPTION = "--groupcoord-nodes"
DEFAULT_CLUSTER_NODES = 3
MARKER = "groupcoord"
# Kafka's legal topic characters; 249 is its limit, names stay far below it.
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]+")
_NAME_PREFIX_MAX = 80


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("groupcoord", "groupcoord test broker")
    group.addoption(CLOCK_OPTION, choices=("system", "manual"), default="system",
                    help="clock of the groupcoord broker fixtures: system (real time) or "
                         "manual (virtual time, moved by broker.advance(ms))")
    group.addoption(NODES_OPTION, type=int, default=DEFAULT_CLUSTER_NODES,
                    help="nodes of the groupcoord_cluster fixture (default 3)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**kwargs): KafkaBroker arguments for groupcoord_fresh_broker")


def _clock(config: pytest.Config) -> Any:
    return config.getoption(CLOCK_OPTION)


@pytest.fixture(scope="session")
def groupcoord_broker(pytestconfig: pytest.Config) -> Iterator[KafkaBroker]:
    from groupcoord.testing.broker import KafkaBroker

    with KafkaBroker(clock=_clock(pytestconfig)) as broker:
        yield broker


@pytest.fixture
def groupcoord_fresh_broker(request: pytest.FixtureRequest) -> Iterator[KafkaBroker]:
    from groupcoord.testing.broker import KafkaBroker

    kwargs: dict[str, Any] = {"clock": _clock(request.config)}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only")
        kwargs.update(marker.kwargs)
    with KafkaBroker(**kwargs) as broker:
        yield broker


@pytest.fixture
def groupcoord_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaBroker]:
    from groupcoord.testing.broker import KafkaBroker

    kwargs: dict[str, Any] = {"clock": _clock(request.config),
                              "nodes": request.config.getoption(NODES_OPTION)}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        kwargs.update(marker.kwargs)
    with KafkaBroker(**kwargs) as broker:
        yield broker


def unique_name(request: pytest.FixtureRequest, kind: str) -> str:
    stem = _ILLEGAL.sub("-", request.node.name).strip("-.")[:_NAME_PREFIX_MAX]
    return f"{kind}-{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    return unique_name(request, "topic")


@pytest.fixture
def unique_group(request: pytest.FixtureRequest) -> str:
    return unique_name(request, "group")
