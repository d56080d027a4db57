"""``driftscan scan``'s renderers (scanview.py) and its JSON model (scanmodel.py), by the names they
have always been imported by. The command line renders through registry.py, which imports
scanview.py alone: a scan pays for pydantic only when it asks for the schema."""

from __future__ import annotations

from .sarif import render_scan_sarif
from .scanmodel import ScanErrorOut, ScanFindingOut, ScanReport, ScanSummary, scan_payload, scan_report, scan_schema
from .scanview import SCAN_SCHEMA_VERSION, render_scan_json, render_scan_text, scan_document

render_scan_sarif_lazy = render_scan_sarif  # its old name

SCAN_RENDERERS = {"text": render_scan_text, "json": render_scan_json, "sarif": render_scan_sarif}

__all__ = ["SCAN_RENDERERS", "SCAN_SCHEMA_VERSION", "ScanErrorOut", "ScanFindingOut", "ScanReport", "ScanSummary",
           "render_scan_json", "render_scan_sarif", "render_scan_sarif_lazy", "render_scan_text", "scan_document", "scan_payload",
           "scan_report", "scan_schema"]
