"""No import circle among our modules.

Every import statement counts: top-level, function-level and under `TYPE_CHECKING`, since each
is a dependency a reader must follow and a circle of them is one concept cut in two. Generated
modules are left out (they import only the wire primitives). A circle found here names its
modules; break it by moving the shared type or function to the module that owns its concept.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, tuple[Path, bool]]:
    """module name -> (file, is a package's __init__)"""
    modules = {}
    for path in sorted((SRC / "groupcoord").rglob("*.py")):
        if "generated" in path.parts:
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def _imported(node: ast.Import | ast.ImportFrom, package: str,
              modules: dict[str, tuple[Path, bool]]) -> list[str]:
    """The names of the modules (or packages) an import statement loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    # `from package import module` names the module; `from module import name`, the module.
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
            for alias in node.names]


def _owner(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(node, package, modules):
                    owner = _owner(target, modules)
                    if owner is not None and owner != name:
                        graph[name].add(owner)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root, children_of_root in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(children_of_root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 300, "the module walk found too few modules"
    assert circles(graph) == []
