"""Inspect Python source for injected debug code: a libcst rule engine and its API.

Entry points for the rest of driftscan:

* ``inspect_source(source, path, rules=None)`` / ``inspect_file(path, rules=None)`` — findings
  for one file (used by ``audit`` on drifted files);
* ``scan_paths(paths, select, ignore, jobs, extra_rule_modules, limits=ParseLimits())`` — the
  ``driftscan scan`` command: walk, prefilter, parse in parallel;
* ``find_artifacts(pattern, newer_than=, owned=, exclude=)`` — dumps a finding's
  ``artifact_pattern`` left on disk: only plausible patterns, a bounded search, only regular
  files no RECORD owns and newer than the code (see artifacts.py);
* ``load_rules`` / ``select_rules`` — the rule registry (built-ins, plugins, config modules).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .artifacts import ArtifactGroup, find_artifacts, is_too_broad
    from .engine import MAX_FILE_BYTES, RuleError, inspect_file, inspect_source
    from .files import ParseLimits, ScanResult
    from .registry import ENTRY_POINT_GROUP, default_rules, load_rules, select_rules
    from .rule import Invalid, Rule, Valid
    from .warmscan import scan_paths

# Imported on first use (PEP 562), not by plain imports: a scan settled from its cache, and an
# audit with no drifted .py, must not import libcst, which the engine, the rules and the registry
# do (0.3-0.7 s by python -X importtime; tests/contract/test_imports.py holds it).
_WHERE = {
    "ArtifactGroup": "artifacts", "find_artifacts": "artifacts", "is_too_broad": "artifacts",
    "MAX_FILE_BYTES": "engine", "RuleError": "engine", "inspect_file": "engine", "inspect_source": "engine",
    "ParseLimits": "files", "ScanResult": "files",
    "ENTRY_POINT_GROUP": "registry", "default_rules": "registry", "load_rules": "registry",
    "select_rules": "registry",
    "Invalid": "rule", "Rule": "rule", "Valid": "rule",
    "scan_paths": "warmscan",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ArtifactGroup",
    "ENTRY_POINT_GROUP",
    "Invalid",
    "MAX_FILE_BYTES",
    "ParseLimits",
    "Rule",
    "RuleError",
    "ScanResult",
    "Valid",
    "default_rules",
    "find_artifacts",
    "inspect_file",
    "inspect_source",
    "is_too_broad",
    "load_rules",
    "scan_paths",
    "select_rules",
]
