"""render.scanmodel: scan --format json as a typed, versioned model; names made printable."""

from __future__ import annotations

import json
import os

import jsonschema

from driftscan.core.values import Finding, Problem, Severity
from driftscan.lint.files import ScanResult
from driftscan.render.scan import scan_document
from driftscan.render.scanmodel import SCAN_SCHEMA_VERSION, scan_payload, scan_report, scan_schema

BAD = os.fsdecode(b"/src/caf\xe9.py")


def _result() -> ScanResult:
    return ScanResult(findings=[(BAD, Finding("DBG101", "breakpoint", Severity.HIGH, 3, 5, "breakpoint() left in",
                                              "    breakpoint()"))],
                      errors=[Problem("/src/big.py", "too large")], files_scanned=2, bytes_scanned=300,
                      files_parsed=1, rules=("DBG101", "DBG105"))


def test_scan_report_fields():
    report = scan_report(_result())
    assert report.schema_version == SCAN_SCHEMA_VERSION == "1"
    finding = report.findings[0]
    assert finding.path == "/src/caf\\xe9.py", "undecodable bytes shown as escapes"
    assert (finding.code, finding.line, finding.column, finding.severity) == ("DBG101", 3, 5, Severity.HIGH)
    assert report.errors[0].message == "too large"
    assert report.summary.findings == 1 and report.summary.files_parsed == 1
    assert report.summary.rules == ["DBG101", "DBG105"]


def test_payload_validates_against_schema_and_matches_the_renderer():
    payload = scan_payload(_result())
    jsonschema.validate(payload, scan_schema())
    json.dumps(payload).encode("utf-8")
    # scan.py writes the same document without pydantic
    assert scan_document(_result()) == payload
