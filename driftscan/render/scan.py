"""Renderers for ``driftscan scan``: linter-style text, or JSON for tools.

The JSON is the ``ScanReport`` model below: ``schema_version`` "1", fields only ever added
(its JSON Schema: ``driftscan schema --for scan``, also docs/scan-schema.json).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, Field

from ..model import Severity
from ..paths import one_line, printable

if TYPE_CHECKING:  # the rule engine (and libcst) is imported only by commands that scan
    from ..inspect import ScanResult

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


def render_scan_json(result: "ScanResult") -> str:
    return scan_report(result).model_dump_json(indent=2) + "\n"


def render_scan_text(result: "ScanResult") -> str:
    lines = [f"{one_line(printable(p))}:{f.line}:{f.column}: {f.code} [{f.severity.value}] {f.name}: "
             f"{one_line(f.message)}" for p, f in result.findings]
    lines += [f"{one_line(printable(e.path))}: error: {one_line(e.message)}" for e in result.errors]
    files = len({p for p, _ in result.findings})
    lines.append(f"{len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} in {files} "
                 f"file{'s' if files != 1 else ''}; {result.files_scanned} files scanned "
                 f"({result.bytes_scanned / 1e6:.1f} MB), {result.files_parsed} parsed; {len(result.errors)} errors")
    return "\n".join(lines) + "\n"


def render_scan_sarif_lazy(result: "ScanResult") -> str:
    from .sarif import render_scan_sarif

    return render_scan_sarif(result)


SCAN_RENDERERS = {"text": render_scan_text, "json": render_scan_json, "sarif": render_scan_sarif_lazy}
