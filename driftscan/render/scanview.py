"""``driftscan scan``'s findings as linter-style text, or as JSON for tools (SARIF: sarif.py).

The JSON is the ``ScanReport`` model (scanmodel.py): ``schema_version`` "1", fields only ever added
(its JSON Schema: ``driftscan schema --for scan``, also docs/scan-schema.json). This module imports
no pydantic: the JSON is built as plain data, key for key the model's.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from ..fs.paths import one_line, printable
from ..core.units import count, size

if TYPE_CHECKING:  # the rule engine (and libcst) is imported only by commands that scan
    from ..lint import ScanResult

SCAN_SCHEMA_VERSION: Final = "1"


def scan_document(result: "ScanResult") -> dict[str, Any]:
    """The JSON document of ``ScanReport`` (scanmodel.py) as plain data, key for key in the
    model's field order (tests/contract/test_schemas.py checks both agree)."""
    return {
        "schema_version": SCAN_SCHEMA_VERSION,
        "findings": [{"path": printable(p), "code": f.code, "name": f.name, "severity": f.severity.value,
                      "line": f.line, "column": f.column, "message": f.message, "snippet": f.snippet}
                     for p, f in result.findings],
        "errors": [{"path": printable(e.path), "message": printable(e.message)} for e in result.errors],
        "summary": {"files_scanned": result.files_scanned, "bytes_scanned": result.bytes_scanned,
                    "files_parsed": result.files_parsed, "findings": len(result.findings),
                    "rules": list(result.rules)},
    }


def render_scan_json(result: "ScanResult") -> str:
    return json.dumps(scan_document(result), indent=2, ensure_ascii=False) + "\n"


def render_scan_text(result: "ScanResult") -> str:
    lines = [f"{one_line(printable(p))}:{f.line}:{f.column}: {f.code} [{f.severity.value}] {f.name}: "
             f"{one_line(f.message)}" for p, f in result.findings]
    lines += [f"{one_line(printable(e.path))}: error: {one_line(e.message)}" for e in result.errors]
    files = len({p for p, _ in result.findings})
    lines.append(f"{len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} in {files} "
                 f"file{'s' if files != 1 else ''}; {result.files_scanned} file{'s' if result.files_scanned != 1 else ''} scanned "
                 f"({size(result.bytes_scanned)}), {result.files_parsed} parsed; {count(len(result.errors), 'error')}")
    return "\n".join(lines) + "\n"
