"""A byte-for-byte picture of a directory tree, to show that something left it alone."""

from __future__ import annotations

import os
from pathlib import Path


def snapshot_dir(root: Path) -> dict[str, bytes | None]:
    """Every file under `root` (relative path -> its bytes) and every directory
    (relative path -> None)."""
    seen: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames:
            seen[str((base / name).relative_to(root)) + "/"] = None
        for name in filenames:
            seen[str((base / name).relative_to(root))] = (base / name).read_bytes()
    return seen


def changes(before: dict[str, bytes | None], after: dict[str, bytes | None]) -> list[str]:
    """What differs: created, removed and changed paths, for an assertion message."""
    out = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    out += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    out += [f"changed {p} ({len(before[p] or b'')} -> {len(after[p] or b'')} bytes)"
            for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return out
