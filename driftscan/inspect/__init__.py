"""Inspect Python source for injected debug code: a libcst rule engine and its API.

Entry points for the rest of driftscan:

* ``inspect_source(source, path, rules=None)`` / ``inspect_file(path, rules=None)`` — findings
  for one file (used by ``audit`` on drifted files);
* ``scan_paths(paths, select, ignore, jobs, prefilter, extra_rule_modules)`` — the
  ``driftscan scan`` command: walk, prefilter, parse in parallel;
* ``find_artifacts(pattern, newer_than=, owned=, exclude=)`` — dumps a finding's
  ``artifact_pattern`` left on disk: only plausible patterns, a bounded search, only regular
  files no RECORD owns and newer than the code (see artifacts.py);
* ``load_rules`` / ``select_rules`` — the rule registry (built-ins, plugins, config modules).
"""

from .artifacts import ArtifactGroup, find_artifacts, is_too_broad
from .engine import MAX_FILE_BYTES, RuleError, inspect_file, inspect_source
from .registry import ENTRY_POINT_GROUP, default_rules, load_rules, select_rules
from .rule import Invalid, Rule, Valid
from .scan import ScanResult, scan_paths

__all__ = [
    "ArtifactGroup",
    "ENTRY_POINT_GROUP",
    "Invalid",
    "MAX_FILE_BYTES",
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
