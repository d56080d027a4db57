"""SARIF output validates against the SARIF 2.1.0 schema (a copy lives in tests/data/sarif)."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from fixtures.harness import run_cli

SCHEMA = os.path.join(os.path.dirname(__file__), "data", "sarif", "sarif-schema-2.1.0.json")


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA) as f:
        return jsonschema.Draft4Validator(json.load(f))


def test_audit_sarif_is_valid_and_carries_drifts_and_findings(planted, validator, tmp_path):
    venv, expected = planted
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "dbg_added.py").write_text("import pdb\n\ndef forward(x):\n    breakpoint()\n    return x\n")
    try:
        proc = run_cli("audit", "--venv", str(venv), "--format", "sarif")
    finally:
        (site / "dbg_added.py").unlink()
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    validator.validate(sarif)
    results = sarif["runs"][0]["results"]
    drift_results = [r for r in results if r["ruleId"].startswith("drift/")]
    assert len(drift_results) == len(expected) + 1
    breakpoint_result = next(r for r in results if r["ruleId"] == "DBG106")
    region = breakpoint_result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 4 and breakpoint_result["level"] == "error"
    rule_ids = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} == rule_ids


def test_scan_sarif_is_valid(tmp_path, validator):
    (tmp_path / "m.py").write_text("import torch\n\ndef forward(x):\n    torch.save(x, '/tmp/dbg_x.pt')\n")
    proc = run_cli("scan", str(tmp_path), "--format", "sarif")
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    validator.validate(sarif)
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["DBG101"]
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "file://" + str(tmp_path / "m.py")
