"""render.formats: the names of the output formats, each with its renderer."""

from __future__ import annotations

import importlib

from driftscan.render import RENDERERS
from driftscan.render.formats import PLAN_FORMATS, REPORT_FORMATS, SCAN_FORMATS
from driftscan.render.planview import PLAN_RENDERERS
from fixtures.reports import every_kind_report


def test_every_report_format_renders_a_report():
    assert tuple(RENDERERS) == REPORT_FORMATS
    report = every_kind_report()
    for fmt in REPORT_FORMATS:
        module = importlib.import_module(f"driftscan.render.{fmt}")
        assert getattr(module, f"render_{fmt}") is RENDERERS[fmt]
        out = RENDERERS[fmt](report)
        assert isinstance(out, str) and "demo" in out, fmt


def test_plan_and_scan_formats_have_renderers():
    assert tuple(PLAN_RENDERERS) == PLAN_FORMATS
    from driftscan.render.scan import SCAN_RENDERERS

    assert tuple(SCAN_RENDERERS) == SCAN_FORMATS
    assert len(set(REPORT_FORMATS)) == len(REPORT_FORMATS)
