"""SARIF 2.1.0 for code-scanning services: debug-code findings at their lines, drifts as results.

Rules: every DBG code that produced a finding (its name and message as metadata), plus one
``drift/<kind>`` rule per drift kind. Levels: high → error, medium → warning, low → note; a
drift is a warning when a reinstall wipes it and a note when it survives (an added file).
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._version import __version__

if TYPE_CHECKING:
    from ..inspect import ScanResult
    from ..report import Report

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"high": "error", "medium": "warning", "low": "note"}


def _uri(path: str) -> str:
    if path.startswith("/"):
        return "file://" + quote(path)
    return quote(str(PurePosixPath(path)))


def _location(path: str, line: int | None = None, column: int | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(path)}}
    if line:
        physical["region"] = {"startLine": line, **({"startColumn": column} if column else {})}
    return {"physicalLocation": physical}


class _Rules:
    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}

    def add(self, rule_id: str, name: str, text: str, level: str) -> str:
        self.rules.setdefault(rule_id, {"id": rule_id, "name": name, "shortDescription": {"text": text},
                                        "defaultConfiguration": {"level": level}})
        return rule_id

    def list(self) -> list[dict[str, Any]]:
        return [self.rules[k] for k in sorted(self.rules)]


def _finding_result(rules: _Rules, path: str, code: str, name: str, severity: str, line: int, column: int,
                    message: str) -> dict[str, Any]:
    level = LEVEL[severity]
    rules.add(code, name, message.split(":", 1)[0], level)
    return {"ruleId": code, "level": level, "message": {"text": message},
            "locations": [_location(path, line, column)]}


def _run(rules: _Rules, results: list[dict[str, Any]], notifications: list[dict[str, Any]]) -> str:
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "driftscan", "version": __version__, "semanticVersion": __version__,
                            "informationUri": "https://pypi.org/project/driftscan/", "rules": rules.list()}},
        "results": results,
    }
    if notifications:
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": notifications}]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


def _notifications(errors) -> list[dict[str, Any]]:
    return [{"level": "warning", "message": {"text": f"{e.path}: {e.message}"}} for e in errors]


def render_sarif(report: Report) -> str:
    rules = _Rules()
    results = []
    for d in report.drifts:
        level = "warning" if d.prediction.value == "wiped" else "note"
        rule = rules.add(f"drift/{d.kind.value}", d.kind.value, f"{d.kind.value} file", level)
        owner = f" ({d.distribution.name} {d.distribution.version})" if d.distribution else ""
        text = (f"{d.kind.value}{owner}, scope {d.scope.value}, {d.prediction.value} by a reinstall. "
                f"{d.evidence} Remedy: {d.remedy}").strip()
        results.append({"ruleId": rule, "level": level, "message": {"text": text},
                        "locations": [_location(d.path)],
                        "properties": {"scope": d.scope.value, "survives_reinstall": d.survives_reinstall,
                                       "relpath": d.relpath}})
        for f in d.findings:
            if f.origin == "upstream":  # the original file has it too: not part of what drifted
                continue
            results.append(_finding_result(rules, d.path, f.code, f.name, f.severity.value, f.line, f.column,
                                           f.message))
    return _run(rules, results, _notifications(report.errors))


def render_scan_sarif(result: ScanResult) -> str:
    from ..paths import printable

    rules = _Rules()
    results = [_finding_result(rules, printable(p), f.code, f.name, f.severity.value, f.line, f.column, f.message)
               for p, f in result.findings]
    return _run(rules, results, _notifications(result.errors))
