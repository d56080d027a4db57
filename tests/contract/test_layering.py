"""Data flows one way: environment → modeldir → snapshot → lint → pipeline → report → render → cli.

A module may import only from its own layer or earlier ones; only cli.py prints or exits.
"""

from __future__ import annotations

import ast
from pathlib import Path
from fixtures.paths import REPO

PACKAGE = REPO / "driftscan"

LAYERS = ["runtime", "_version", "core", "core.errors", "fs", "core.values", "fs.paths", "core.datamodel", "fs.reader", "caches", "caches.location", "fs.helpers", "formats", "formats.lfs", "fs.atomic", "formats.tomlfile", "formats.record", "formats.directurl", "formats.linediff", "formats.jsondiff", "formats.patch", "lockfile", "reinstall", "reinstall.excise", "formats.manifest", "caches.statcache", "git", "environment", "procs", "modeldir", "snapshot", "pristine", "provenance", "lint",
          "reinstall.dumpledger", "reinstall.patchledger", "pipeline", "pipeline.changes", "pipeline.classify", "report", "report.contract", "report.policy", "report.lockcheck", "compare", "reinstall.expect", "reinstall.plan", "report.accept", "pipeline.options", "pipeline.stages", "pipeline.snapshots", "reinstall.checkpoint", "reinstall.restore", "reinstall.reapply", "patches", "reinstall.guard", "render", "config", "config.find", "config.settings", "api", "fleet", "__init__", "cli", "__main__"]


def layer_of(module: str) -> int:
    """The layer of the longest entry of LAYERS that is ``module`` or a package holding it."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in LAYERS:
            return LAYERS.index(name)
    raise AssertionError(f"{module}: in no layer of LAYERS")


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield ".".join(rel.parts), path


def imported(path: Path, module: str):
    """Every driftscan module ``path`` imports, as a name relative to the package
    (``environment.files``); ``from .. import git`` yields ``environment`` and ``environment.git``."""
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if not path.name == "__init__.py" else module.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1] if node.level > 1 else package
            target = ".".join(base + ([node.module] if node.module else []))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("driftscan."):
            target = node.module.removeprefix("driftscan.")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("driftscan."):
                    yield alias.name.removeprefix("driftscan."), node.lineno
            continue
        else:
            continue
        yield target, node.lineno
        for alias in node.names:
            if (PACKAGE / (target.replace(".", "/") if target else "") / f"{alias.name}.py").exists() or \
                    (PACKAGE / (target.replace(".", "/") if target else "") / alias.name / "__init__.py").exists():
                yield f"{target}.{alias.name}" if target else alias.name, node.lineno


def test_imports_flow_one_way():
    wrong = []
    for module, path in modules():
        own = layer_of(module)
        for target, line in imported(path, module):
            if target and layer_of(target) > own:
                wrong.append(f"{module}:{line} imports {target}")
    assert wrong == []


def test_environment_and_model_directories_do_not_import_each_other():
    """environment/ (RECORD-driven) and modeldir/ (provenance-driven) are two subsystems; what
    needs both (snapshots) composes them in snapshot/."""
    wrong = []
    for module, path in modules():
        for own, other in (("environment", "modeldir"), ("modeldir", "environment")):
            if module == own or module.startswith(own + "."):
                wrong += [f"{module}:{line} imports {target}" for target, line in imported(path, module)
                          if target == other or target.startswith(other + ".")]
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
        # A module's ``if __name__ == "__main__":`` block is a script entry point, like the CLI.
        script = {id(n) for top in tree.body if isinstance(top, ast.If) and ast.unparse(top.test) in
                  ("__name__ == '__main__'", '__name__ == "__main__"') for n in ast.walk(top)}
        for node in ast.walk(tree):
            if id(node) in script:
                continue
            if isinstance(node, ast.Call) and id(node) not in forking:
                name = ast.unparse(node.func)
                if name in ("print", "sys.exit", "exit", "quit", "click.echo", "os._exit", "sys.stdout.write",
                            "sys.stderr.write"):
                    offenders.append(f"{module}:{node.lineno} {name}")
            elif isinstance(node, ast.Raise) and node.exc is not None and \
                    ast.unparse(node.exc).split("(")[0] in ("SystemExit", "KeyboardInterrupt"):
                offenders.append(f"{module}:{node.lineno} raise {ast.unparse(node.exc)}")
    assert offenders == []
