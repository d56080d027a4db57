"""Names of the output formats, for the command line's choices: no renderer imported here.
tests/contract/test_schemas.py checks each list against the renderers it names."""

from __future__ import annotations

#: audit and diff (render/__init__.py ``RENDERERS``), in their order there.
REPORT_FORMATS = ("text", "json", "sarif", "markdown", "github")
#: plan (planview.py ``PLAN_RENDERERS``)
PLAN_FORMATS = ("text", "json")
#: scan (scan.py ``SCAN_RENDERERS``)
SCAN_FORMATS = ("text", "json", "sarif")
