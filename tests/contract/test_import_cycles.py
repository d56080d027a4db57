"""No import cycles between driftscan's modules: a newcomer reads the package bottom-up.

Every runtime import counts, deferred ones (inside a function) included: a circle they close still
ties two modules together. Imports under ``if TYPE_CHECKING:`` are annotations only and do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_layering import PACKAGE, modules


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under an ``if TYPE_CHECKING:`` block."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _runtime_imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("driftscan."):
            target = node.module.removeprefix("driftscan.")
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("driftscan.") for a in node.names if a.name.startswith("driftscan."))
            continue
        else:
            continue
        for alias in node.names:  # ``from PKG import submodule`` depends on the submodule, not PKG's body
            sub = f"{target}.{alias.name}" if target else alias.name
            if (PACKAGE / sub.replace(".", "/")).with_suffix(".py").exists() or \
                    (PACKAGE / sub.replace(".", "/") / "__init__.py").exists():
                out.add(sub)
            else:
                out.add(target)
    return out


def cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules():
        module = module.removesuffix(".__init__")
        graph[module] = _runtime_imports(path, module) - {module}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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


def test_no_import_cycles():
    assert cycles() == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    import test_layering

    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    (tmp_path / "__init__.py").write_text("")
    monkeypatch.setattr(test_layering, "PACKAGE", tmp_path)
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path)
    assert cycles() == [["a", "b"]]
