"""The Java harness's build directory keeps every build a run may still use."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.java import STALE_BUILD_AGE_S, remove_stale_builds

NOW = 1_800_000_000.0


def _build(root: Path, name: str, age_s: float) -> Path:
    path = root / name
    path.mkdir()
    (path / "Harness.class").write_bytes(b"")
    os.utime(path, (NOW - age_s, NOW - age_s))
    return path


def test_only_older_sources_of_the_same_client_version_are_removed(tmp_path: Path) -> None:
    """A checkout tested again hours later still has its 4.4.0 build from the first run: the
    3.9.1 client's compile in the second run must not remove it (it did, and every Java test
    after it failed with ClassNotFoundException)."""
    old = STALE_BUILD_AGE_S + 60
    current = _build(tmp_path, "4.4.0-aaaa", old)
    other_version = _build(tmp_path, "3.9.1-cccc", old)
    older_sources = _build(tmp_path, "4.4.0-bbbb", old)
    recent_sources = _build(tmp_path, "4.4.0-dddd", 60)

    remove_stale_builds(tmp_path, "4.4.0", current, NOW)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (current, other_version, recent_sources))
    assert not older_sources.exists()

    remove_stale_builds(tmp_path, "3.9.1", other_version, NOW)
    assert current.exists() and other_version.exists() and recent_sources.exists()
