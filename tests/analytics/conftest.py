"""Shared fixtures of the analytics tests: one synthetic log dir, one Spark session.

The log dir is generated once per test run (``gen-fixture`` defaults: 600 s, 4 partitions).
The Spark session is created once, lazily, only when a ``spark``-marked test needs it, with
``local[2]``, two shuffle partitions and the UI and progress bar off.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.analytics.fixture.generate import generate
from groupcoord.analytics.fixture.spec import FixtureSpec

# Without the [spark] extra (pyarrow, pandas, numba) only the pure-Python tests can run.
_PURE = ["test_burrow.py", "test_codec.py", "test_dump.py"]
if importlib.util.find_spec("pyarrow") is None or importlib.util.find_spec("pandas") is None:
    collect_ignore_glob = [p.name for p in Path(__file__).parent.glob("test_*.py")
                           if p.name not in _PURE]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs pyspark and Java 17+ (the [spark] extra)")


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("analytics-fixture")
    manifest = generate(root, FixtureSpec())
    return root, manifest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Java 17+ is needed for Spark")
    from groupcoord.analytics.driver.session import build_session

    session = build_session("local[2]", app_name="groupcoord-analytics-tests",
                            shuffle_partitions=2)
    yield session
    session.stop()
