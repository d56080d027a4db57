"""Data flows one way: discover → verify → inspect → classify → report → render → cli.

A module may import only from its own layer or earlier ones; only cli.py prints or exits.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "driftscan"

LAYERS = ["_version", "errors", "model", "paths", "fileio", "forking", "atomic", "tomlfile", "record", "jsondiff", "manifest", "cache", "discover", "verify", "inspect", "rules",
          "classify", "report", "expect", "plan", "render", "config", "api", "__init__", "cli", "__main__"]
# rules and inspect are one layer: rules are loaded by the inspect registry and subclass its Rule.
SAME_LAYER = {"rules": "inspect", "findings": "inspect"}


def layer_of(module: str) -> int:
    top = module.split(".")[0]
    top = SAME_LAYER.get(top, top)
    return LAYERS.index(top)


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield ".".join(rel.parts), path


def imported(path: Path, module: str):
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if not path.name == "__init__.py" else module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1] if node.level > 1 else package
            target = ".".join(base + ([node.module] if node.module else []))
            yield target, node.lineno
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("driftscan."):
            yield node.module.removeprefix("driftscan."), node.lineno


def test_imports_flow_one_way():
    wrong = []
    for module, path in modules():
        own = layer_of(module)
        for target, line in imported(path, module):
            if target and layer_of(target) > own:
                wrong.append(f"{module}:{line} imports {target}")
    assert wrong == []


def test_only_cli_prints_or_exits():
    offenders = []
    for module, path in modules():
        if module.split(".")[0] in ("cli", "__main__"):
            continue
        tree = ast.parse(path.read_text())
        # A forked child must end itself with os._exit: allowed in the function that forks it.
        forking = {id(call) for func in ast.walk(tree) if isinstance(func, ast.FunctionDef)
                   if any(isinstance(n, ast.Call) and ast.unparse(n.func) in ("os.fork", "fork_quietly")
                          for n in ast.walk(func))
                   for call in ast.walk(func) if isinstance(call, ast.Call) and ast.unparse(call.func) == "os._exit"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and id(node) not in forking:
                name = ast.unparse(node.func)
                if name in ("print", "sys.exit", "exit", "click.echo", "os._exit"):
                    offenders.append(f"{module}:{node.lineno} {name}")
    assert offenders == []
