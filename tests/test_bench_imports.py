"""Every benchmark module imports: a moved or renamed module of ours breaks `make bench` here,
in the suite, rather than on the next benchmark run."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH_MODULES = sorted(m.name for m in pkgutil.iter_modules([str(ROOT / "bench")]))


@pytest.mark.parametrize("name", BENCH_MODULES)
def test_bench_module_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    importlib.import_module(f"bench.{name}")
    assert f"bench.{name}" in sys.modules
