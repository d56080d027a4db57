"""fleet.model: each node's status and the comparison; the full reports stay out of the JSON."""

from __future__ import annotations

import json

from driftscan.compare.model import OutlierOut, SkewMachineOut, VersionSkewOut
from driftscan.fleet.model import FleetResult, NodeOut
from fixtures.reports import clean_report


def test_differs_and_incomplete():
    ok = NodeOut(node_id="a" * 12, status="ok")
    assert not FleetResult(nodes=[ok]).differs and not FleetResult(nodes=[ok]).incomplete
    assert FleetResult(nodes=[ok, NodeOut(node_id="b", status="unreachable")]).incomplete
    outlier = OutlierOut(machine="a", path="/p", root="venv", relpath="p", kind="modified", this={"state": "x"})
    assert FleetResult(outliers=[outlier]).differs
    skew = VersionSkewOut(distribution="torch", machines=[SkewMachineOut(machine="a")])
    assert FleetResult(version_skew=[skew]).differs


def test_full_report_is_not_in_the_json():
    node = NodeOut(node_id="a", status="ok", report=clean_report(), summary={"drifts": 0})
    data = json.loads(FleetResult(nodes=[node]).model_dump_json())
    assert "report" not in data["nodes"][0] and data["nodes"][0]["summary"] == {"drifts": 0}
    assert "comparison" not in data and data["schema_version"] == "1"
    assert node.report is not None, "kept for API callers"
