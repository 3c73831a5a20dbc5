"""The pytest plugin as this suite sees it (it is loaded here too, by its entry point), and
its command-line option as a user's suite sees it (pytest in a subprocess)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from groupcoord.testing import KafkaBroker

PLUGIN_MODULE = "groupcoord.testing.pytest_plugin"
LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    entry_points = importlib.metadata.entry_points(group="pytest11")
    assert PLUGIN_MODULE in {ep.value for ep in entry_points}, (
        "the installed groupcoord metadata lacks its pytest11 entry point: reinstall the "
        "package (`make venv` does when pyproject.toml changed)")


def test_unique_names_are_legal_and_fresh(unique_topic: str, unique_group: str) -> None:
    assert LEGAL_NAME.match(unique_topic) and LEGAL_NAME.match(unique_group)
    assert unique_topic.startswith("topic-test_unique_names_are_legal_and_fresh-")
    assert unique_group.startswith("group-test_unique_names_are_legal_and_fresh-")


@pytest.mark.parametrize("case", ["a[b/c]", "x y"])
def test_unique_names_of_parametrized_tests_are_legal(case: str, unique_topic: str) -> None:
    assert LEGAL_NAME.match(unique_topic), unique_topic


def test_session_and_fresh_brokers_are_different_brokers(
        groupcoord_broker: KafkaBroker, groupcoord_fresh_broker: KafkaBroker) -> None:
    assert groupcoord_broker.running and groupcoord_fresh_broker.running
    assert groupcoord_broker.bootstrap_servers != groupcoord_fresh_broker.bootstrap_servers
    assert groupcoord_broker.clock is None  # this suite runs with the default option


@pytest.mark.groupcoord(clock="manual", start_ms=5_000)
def test_a_marker_configures_the_fresh_broker(groupcoord_fresh_broker: KafkaBroker) -> None:
    assert groupcoord_fresh_broker.clock is not None
    groupcoord_fresh_broker.advance(1_000)
    assert groupcoord_fresh_broker.clock.now_ms() == 6_000


USER_TESTS = textwrap.dedent("""
    def test_session(groupcoord_broker):
        assert groupcoord_broker.clock is not None
        groupcoord_broker.advance(10)

    def test_fresh(groupcoord_fresh_broker):
        before = groupcoord_fresh_broker.clock.now_ms()
        groupcoord_fresh_broker.advance(45_000)
        assert groupcoord_fresh_broker.clock.now_ms() == before + 45_000
""")


def test_the_clock_option_gives_both_fixtures_virtual_time(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--groupcoord-clock=manual", str(tmp_path)],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
