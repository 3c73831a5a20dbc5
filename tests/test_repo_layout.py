"""Test modules need unique basenames: the test directories are not packages, so pytest
imports each module by its file name and two modules of one name cannot both load."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_names_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py")
                    if p.name not in ("conftest.py", "__init__.py") and "golden" not in p.parts)
    assert [n for n, c in names.items() if c > 1] == []
