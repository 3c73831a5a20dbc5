"""The broker imports its request handlers ahead of use on a worker thread, except where
imports parse source into `ast` objects (pytest's assertion rewriting, which covers the whole
package because groupcoord is a pytest plugin): CPython 3.11 keeps the AST conversion's
depth per interpreter, so two threads parsing at once fail an import with SystemError."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from groupcoord.server import import_ahead


def _module_file(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("LOADED = True\n")


def test_under_assertion_rewriting_nothing_is_imported_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # This test runs under pytest, whose rewriting hook is on sys.meta_path.
    assert import_ahead.imports_build_ast()
    _module_file(tmp_path, "ahead_under_pytest")
    monkeypatch.syspath_prepend(str(tmp_path))
    import_ahead.import_ahead(("ahead_under_pytest",))
    assert "ahead_under_pytest" not in sys.modules


def test_without_it_the_modules_are_imported_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = [f for f in sys.meta_path if type(f).__name__ == "AssertionRewritingHook"]
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f not in hooks])
    assert not import_ahead.imports_build_ast()
    _module_file(tmp_path, "ahead_plain")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import_ahead.import_ahead(("ahead_plain", "no_such_module_anywhere"))
        assert sys.modules["ahead_plain"].LOADED
    finally:
        sys.modules.pop("ahead_plain", None)
