"""Renderers for ``driftscan scan``: linter-style text, or JSON for tools."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..paths import one_line, printable

if TYPE_CHECKING:  # the rule engine (and libcst) is imported only by commands that scan
    from ..inspect import ScanResult


def scan_payload(result: "ScanResult") -> dict:
    return {
        "findings": [{"path": printable(p), "code": f.code, "name": f.name, "severity": f.severity.value,
                      "line": f.line, "column": f.column, "message": f.message, "snippet": f.snippet}
                     for p, f in result.findings],
        "errors": [{"path": printable(e.path), "message": printable(e.message)} for e in result.errors],
        "summary": {"files_scanned": result.files_scanned, "bytes_scanned": result.bytes_scanned,
                    "files_parsed": result.files_parsed, "findings": len(result.findings),
                    "rules": list(result.rules)},
    }


def render_scan_json(result: "ScanResult") -> str:
    return json.dumps(scan_payload(result), indent=2) + "\n"


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
