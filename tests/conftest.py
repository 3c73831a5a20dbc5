"""Project-wide pytest fixtures: brokers as subprocesses, and their stderr on failure.

Fixtures:
- `broker_factory`: make any number of brokers (own data dir each) inside the test's tmp dir;
  all are SIGTERMed at teardown.
- `broker`: one started broker for a single test (restart and crash tests use this).
- `module_broker`: one started broker shared by a whole test module (interop, fuzzing), so
  start-up cost is paid once per module.

A broker unpacks as `(bootstrap, data_dir, proc)`; it also has `stop()`, `kill()`,
`restart()` and `log_text()`. When a test fails, the stderr of every broker it used is
attached to the report.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Make `helpers` importable whether or not the test directories are packages.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from helpers.broker import ONE_NODE, THREE_NODE_CLUSTER, BrokerFactory, BrokerProcess
from helpers.postgres_cluster import cluster_bootstrap


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python (a test oracle and client) loads its protocol schemas through an importlib
    # API that warns on every import; the noise hides warnings that matter.
    config.addinivalue_line(
        "filterwarnings", "ignore:.*is deprecated. Use files:DeprecationWarning"
    )


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    factory = BrokerFactory(tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def broker(broker_factory: BrokerFactory, request: pytest.FixtureRequest) -> BrokerProcess:
    """A broker of the test's own; parametrised (indirectly) with THREE_NODE_CLUSTER, the
    bootstrap node of the session's three-node cluster on PostgreSQL instead (interop)."""
    if getattr(request, "param", ONE_NODE) == THREE_NODE_CLUSTER:
        return cluster_bootstrap(request)
    return broker_factory.create()


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(tmp_path_factory.mktemp("broker"))
    broker = factory.create()
    yield broker
    factory.close()


def _brokers_used_by(item: pytest.Item) -> list[BrokerProcess]:
    brokers: list[BrokerProcess] = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, BrokerProcess):
            brokers.append(value)
        elif isinstance(value, BrokerFactory):
            brokers.extend(value.brokers)
    return brokers


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        for broker in _brokers_used_by(item):
            title = f"broker stderr ({broker.log_path})"
            report.sections.append((title, broker.log_tail()))
