"""Names of the output formats, for the command line's choices: read from the registry's table
(registry.py), which imports no renderer. tests/contract/test_schemas.py checks each list against
the renderers it names."""

from __future__ import annotations

from .registry import PLAN, REPORT, SCAN, format_names

#: audit and diff (render/__init__.py ``RENDERERS``), in their order there.
REPORT_FORMATS = tuple(format_names(REPORT))
#: plan (planview.py ``PLAN_RENDERERS``)
PLAN_FORMATS = tuple(format_names(PLAN))
#: scan (scan.py ``SCAN_RENDERERS``)
SCAN_FORMATS = tuple(format_names(SCAN))
