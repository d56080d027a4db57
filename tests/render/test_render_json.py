"""render.json: the report as JSON, every field, read back to the same report."""

from __future__ import annotations

import json

from driftscan.core.values import DriftKind
from driftscan.render.json import render_json
from driftscan.report.contract import Report
from fixtures.reports import every_kind_report


def test_json_round_trips_the_report():
    report = every_kind_report(duration=0.5)
    out = render_json(report)
    assert out.endswith("}\n") and out.startswith("{\n  ")
    data = json.loads(out)
    assert {d["kind"] for d in data["drifts"]} == {k.value for k in DriftKind}
    again = Report.model_validate(data)
    assert again.model_dump(mode="json") == report.model_dump(mode="json")


def test_json_keeps_values_text_would_escape():
    report = every_kind_report()
    data = json.loads(render_json(report))
    modified = next(d for d in data["drifts"] if d["kind"] == "modified")
    assert "\n+breakpoint()\n" in modified["diff"], "multi-line values are kept as they are"
    assert modified["findings"][0]["severity"] == "high"
