"""The pydantic model of ``driftscan scan --format json`` (scan.py renders it without
pydantic; this is its schema, ``driftscan schema --for scan``, and its typed form)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, Field

from ..core.values import Severity
from ..fs.paths import printable

if TYPE_CHECKING:
    from ..lint import ScanResult

SCAN_SCHEMA_VERSION: Final = "1"


class ScanFindingOut(BaseModel):
    path: str = Field(description="as given on the command line, or found under a directory given there")
    code: str
    name: str
    severity: Severity
    line: int = Field(description="1-based")
    column: int = Field(description="1-based, in code points")
    message: str
    snippet: str = Field(default="", description="the source line of the finding")


class ScanErrorOut(BaseModel):
    path: str
    message: str


class ScanSummary(BaseModel):
    files_scanned: int
    bytes_scanned: int
    files_parsed: int = Field(description="files the byte-level prefilter let through to the parser")
    findings: int
    rules: list[str] = Field(default_factory=list, description="codes of the rules that ran")


class ScanReport(BaseModel):
    """``driftscan scan --format json``."""

    schema_version: Literal["1"] = SCAN_SCHEMA_VERSION
    findings: list[ScanFindingOut] = Field(default_factory=list)
    errors: list[ScanErrorOut] = Field(default_factory=list, description="files that could not be scanned")
    summary: ScanSummary


def scan_report(result: "ScanResult") -> ScanReport:
    return ScanReport(
        findings=[ScanFindingOut(path=printable(p), code=f.code, name=f.name, severity=f.severity, line=f.line,
                                 column=f.column, message=f.message, snippet=f.snippet) for p, f in result.findings],
        errors=[ScanErrorOut(path=printable(e.path), message=printable(e.message)) for e in result.errors],
        summary=ScanSummary(files_scanned=result.files_scanned, bytes_scanned=result.bytes_scanned,
                            files_parsed=result.files_parsed, findings=len(result.findings),
                            rules=list(result.rules)),
    )


def scan_payload(result: "ScanResult") -> dict[str, Any]:
    return scan_report(result).model_dump(mode="json")


def scan_schema() -> dict[str, Any]:
    return ScanReport.model_json_schema()
