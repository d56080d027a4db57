"""The generated rule catalogue is current, and the inspect layer keeps to its imports."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import driftscan.lint
from driftscan.lint.catalogue import CORPUS, render
from fixtures.paths import REPO
from tests.e2e.test_scan_upstream_corpus import KEPT

ROOT = str(REPO)
LINT_DIR = os.path.dirname(driftscan.lint.__file__)
RULES_DIR = os.path.join(LINT_DIR, "rules")


def test_docs_rules_md_is_generated_from_the_rules():
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as f:
        committed = f.read()
    assert committed == render(), "docs/rules.md is stale: python -m driftscan.lint.catalogue > docs/rules.md"


def test_catalogue_lists_every_rule_with_its_examples():
    text = render()
    for code in ("DBG001", "DBG101", "DBG109"):
        assert f"## {code} `" in text
    assert "/tmp/nomla_*_*.pt" in text  # an INVALID example's expected artifact pattern


def test_catalogue_justifies_every_finding_kept_in_pristine_upstream_code():
    """The corpus test's kept findings (path:line:code) are the rows of docs/rules.md's section."""
    for entry in KEPT:
        path, line, code = entry.rsplit(":", 2)
        row = next((r for r in CORPUS.splitlines() if r.startswith(f"| `{path}:{line}` |")), None)
        assert row is not None, f"{entry} is not justified in docs/rules.md"
        assert f"| {code} |" in row
    assert CORPUS.count("\n| `") == len(KEPT)  # and no other row
    assert CORPUS in render()


def test_catalogue_module_runs():
    command = [sys.executable, "-m", "driftscan.lint.catalogue"]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    assert out.stdout == render()


def _imports(path: str) -> set[str]:
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the package
                package = "driftscan." + os.path.basename(os.path.dirname(path))
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
    return found


def test_the_linter_imports_only_model_errors_and_itself():
    allowed = ("driftscan.core.values", "driftscan.core.errors", "driftscan.fs.reader", "driftscan.fs.helpers", "driftscan.lint",
               "driftscan.lint.rules", "driftscan.caches.location", "driftscan.caches.racy",
               "driftscan.caches.keys",  # caches: the atomic writer, the racy rule and the key encoding, stdlib only
               "driftscan.core.units")  # how counts and sizes are said, stdlib only
    for directory in (LINT_DIR, RULES_DIR):
        for name in os.listdir(directory):
            if name.endswith(".py"):
                for module in _imports(os.path.join(directory, name)):
                    if module.startswith("driftscan"):
                        assert module.startswith(allowed), f"{name} imports {module}"


def test_library_code_does_not_print_or_exit():
    from driftscan.lint import inspect_file

    offenders = []
    for directory in (LINT_DIR, RULES_DIR):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py") and name != "catalogue.py":  # the generator writes stdout
                findings = inspect_file(os.path.join(directory, name))
                offenders += [(name, f.line) for f in findings if f.code == "DBG109"]
                source = open(os.path.join(directory, name), encoding="utf-8").read()
                if "sys.exit" in source:
                    offenders.append((name, "sys.exit"))
    assert offenders == []
