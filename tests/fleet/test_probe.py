"""fleet.probe: what a node has, with the standard library only (it travels by value)."""

from __future__ import annotations

import ast
import inspect
import platform
import sys

from driftscan.fleet import probe
from driftscan.fleet.probe import probe_node


def test_probe_names_what_cannot_be_imported():
    out = probe_node(["json", "no_such_module_for_the_probe", "bad..name"])
    assert out["missing"] == ["no_such_module_for_the_probe", "bad..name"]
    assert out["python"] == platform.python_version() and out["executable"] == sys.executable
    assert out["driftscan"] is not None and out["driftscan_error"] == ""
    assert len(out["sys_path"]) <= 20


def test_probe_imports_only_the_standard_library():
    tree = ast.parse(inspect.getsource(probe))
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}, names
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree)), "no relative imports"
