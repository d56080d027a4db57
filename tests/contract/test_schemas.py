"""``scan`` and ``plan`` JSON carry ``schema_version`` and have published JSON Schemas
(docs/scan-schema.json, docs/plan-schema.json, ``driftscan schema --for scan|plan``), and what the
real commands write validates against them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from driftscan.reinstall.plan import Plan
from driftscan.render import SCHEMA_KINDS, json_schema
from driftscan.render.scan import ScanReport
from fixtures.formats import NAME, make_scenario
from fixtures.harness import run_cli
from fixtures.paths import REPO

DOCS = REPO / "docs"
PUBLISHED = {"scan": DOCS / "scan-schema.json", "plan": DOCS / "plan-schema.json", "audit": DOCS / "report-schema.json",
             "compare": DOCS / "compare-schema.json", "guard": DOCS / "guard-schema.json",
             "fleet": DOCS / "fleet-schema.json", "procs": DOCS / "procs-schema.json",
             "lock-check": DOCS / "lock-check-schema.json", "patch-export": DOCS / "patch-export-schema.json",
             "patch-apply": DOCS / "patch-apply-schema.json", "patch-rebase": DOCS / "patch-rebase-schema.json"}


def validator(kind: str):
    schema = json_schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return make_scenario(tmp_path_factory.mktemp("schemas"))


@pytest.mark.parametrize("kind", ["scan", "plan", "compare", "fleet", "audit", "guard", "procs", "lock-check",
                                  "patch-export", "patch-apply", "patch-rebase"])
def test_committed_schema_is_current(kind):
    with open(PUBLISHED[kind]) as f:
        assert json.load(f) == json_schema(kind), \
            f"regenerate with: driftscan schema --for {kind} > docs/{PUBLISHED[kind].name}"


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_cli_schema_for(kind):
    proc = run_cli("schema", "--for", kind)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json_schema(kind)


def test_committed_guard_schema_is_current():
    """guard's JSON (``GuardReport``; a real run validates in tests/e2e/test_guard.py) has its published schema."""
    from driftscan.reinstall.guard import GuardReport

    with open(PUBLISHED["guard"]) as f:
        published = json.load(f)
    assert published == json_schema("guard"), "regenerate with: driftscan schema --for guard > docs/guard-schema.json"
    assert {k: v for k, v in published.items() if k not in ("$schema", "$id")} == GuardReport.model_json_schema()
    assert list(GuardReport.model_fields)[0] == "schema_version"


def test_schema_defaults_to_the_audit_report():
    proc = run_cli("schema")
    assert proc.returncode == 0 and json.loads(proc.stdout) == json_schema("audit")
    assert run_cli("schema", "--for", "restore").returncode == 2


def test_schema_version_is_the_first_field():
    assert list(Plan.model_fields)[0] == "schema_version"
    assert list(ScanReport.model_fields)[0] == "schema_version"
    for kind in ("scan", "plan"):
        schema = json_schema(kind)
        assert schema["properties"]["schema_version"] == {"const": "1", "default": "1", "title": "Schema Version",
                                                          "type": "string"}


def test_real_scan_json_validates(scenario):
    proc = run_cli("scan", str(scenario.site / NAME), "--format", "json")
    assert proc.returncode & 1, proc.stderr
    payload = json.loads(proc.stdout)
    assert next(iter(payload)) == "schema_version" and payload["schema_version"] == "1"
    assert {f["code"] for f in payload["findings"]} >= {"DBG101", "DBG104", "DBG106"}
    check = validator("scan")
    check.validate(payload)
    for broken in (dict(payload, schema_version="2"), {k: v for k, v in payload.items() if k != "summary"}):
        with pytest.raises(jsonschema.ValidationError):
            check.validate(broken)
    bad = copy.deepcopy(payload)
    bad["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        check.validate(bad)


def test_real_plan_json_validates(scenario):
    proc = run_cli("plan", "--reinstall", NAME, "--venv", str(scenario.venv), "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    payload = json.loads(proc.stdout)
    assert next(iter(payload)) == "schema_version" and payload["schema_version"] == "1"
    assert payload["reinstall"] == [NAME] and payload["wiped"]
    check = validator("plan")
    check.validate(payload)
    with pytest.raises(jsonschema.ValidationError):
        check.validate(dict(payload, schema_version="2"))
    bad = copy.deepcopy(payload)
    bad["audit"]["drifts"][0]["kind"] = "renamed"
    with pytest.raises(jsonschema.ValidationError):
        check.validate(bad)


def test_scan_json_is_the_scan_report_model_byte_for_byte():
    """render/scan.py writes the JSON without pydantic; it must be what ``ScanReport`` gives."""
    from driftscan.lint.files import ScanResult
    from driftscan.core.values import Finding, Problem, Severity
    from driftscan.render.scan import render_scan_json
    from driftscan.render.scanmodel import scan_report

    odd = "caf\u00e9 \u2028 \x1b[31m \"q\" \\ \x7f \t\n"
    result = ScanResult(
        findings=[(f"/t/{odd}\udcff.py", Finding("DBG101", "torch-save-call", Severity.HIGH, 3, 5, f"msg {odd}", odd, None)),
                  ("/t/b.py", Finding("DBG109", "print-call", Severity.LOW, 1, 1, "print", "", "/tmp/*.pt"))],
        errors=[Problem(f"/t/{odd}\udcfe", f"cannot read: {odd}")],
        files_scanned=3, bytes_scanned=12345678901, files_parsed=2, rules=("DBG101", "DBG109"))
    assert render_scan_json(result) == scan_report(result).model_dump_json(indent=2) + "\n"
    empty = ScanResult()
    assert render_scan_json(empty) == scan_report(empty).model_dump_json(indent=2) + "\n"


def test_format_names_are_the_renderers():
    from driftscan.render import RENDERERS
    from driftscan.render.formats import PLAN_FORMATS, REPORT_FORMATS, SCAN_FORMATS
    from driftscan.render.planview import PLAN_RENDERERS
    from driftscan.render.scan import SCAN_RENDERERS

    assert (tuple(RENDERERS), tuple(PLAN_RENDERERS), tuple(SCAN_RENDERERS)) == (REPORT_FORMATS, PLAN_FORMATS, SCAN_FORMATS)


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_every_published_schema_names_its_dialect_and_itself(kind):
    """``$schema`` and ``$id`` come first, in every schema driftscan publishes (the command and the
    file in docs/); ``$id`` is ``urn:driftscan:schema:<kind>:<schema_version>``."""
    with open(PUBLISHED[kind]) as f:
        published = json.load(f)
    assert list(published)[:2] == ["$schema", "$id"]
    assert published["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert published["$id"] == f"urn:driftscan:schema:{kind}:1"
    assert published["properties"]["schema_version"]["const"] == "1"
    proc = run_cli("schema", "--for", kind)
    assert list(json.loads(proc.stdout))[:2] == ["$schema", "$id"]


def test_ids_differ_per_kind():
    assert len({json_schema(kind)["$id"] for kind in SCHEMA_KINDS}) == len(SCHEMA_KINDS)
