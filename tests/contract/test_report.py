"""The report contract: field names CI parses, a versioned schema, every format has a renderer."""

from __future__ import annotations

import json
import os

import click
import pytest

from driftscan.cli import main
from driftscan.render import RENDERERS, json_schema
from driftscan.report.contract import Report, report_schema, write_atomic
from fixtures.harness import run_cli
from fixtures.paths import REPO

DOC_SCHEMA = os.path.join(REPO, "docs", "report-schema.json")


def test_schema_has_the_fixed_fields():
    schema = report_schema()
    assert set(schema["required"]) >= {"target", "summary"}
    props = schema["properties"]
    assert set(props) >= {"schema_version", "tool", "target", "summary", "drifts", "unverifiable", "errors"}
    drift = schema["$defs"]["DriftOut"]["properties"]
    assert set(drift) >= {"path", "relpath", "kind", "scope", "distribution", "survives_reinstall", "remedy",
                          "findings", "expected", "actual"}
    assert set(schema["$defs"]["Summary"]["properties"]) >= {"distributions", "files_checked", "drifts",
                                                             "unverifiable", "errors"}


def test_committed_schema_is_current():
    with open(DOC_SCHEMA) as f:
        assert json.load(f) == json_schema("audit"), "regenerate with: driftscan schema > docs/report-schema.json"


def test_cli_schema_command():
    proc = run_cli("schema")
    assert proc.returncode == 0 and json.loads(proc.stdout) == json_schema("audit")
    assert {k: v for k, v in json.loads(proc.stdout).items() if k not in ("$schema", "$id")} == report_schema()


def test_every_format_choice_has_a_renderer():
    audit_cmd = main.get_command(click.Context(main), "audit")
    assert audit_cmd is not None
    fmt = next(p for p in audit_cmd.params if p.name == "fmt")
    assert set(fmt.type.choices) == set(RENDERERS)


def test_json_roundtrip(pristine_pip_venv):
    from driftscan import audit

    report = audit(venv=str(pristine_pip_venv))
    again = Report.model_validate_json(RENDERERS["json"](report))
    assert again.summary == report.summary and again.target == report.target


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    write_atomic(str(target), "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_atomic_failure_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OSError):
        write_atomic(str(target), "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_text_collapses_a_directory_of_added_files(tmp_path):
    from driftscan import audit
    from driftscan.render.text import COLLAPSE_OVER

    site = tmp_path / "site"
    (site / "copied").mkdir(parents=True)
    for i in range(COLLAPSE_OVER + 1):
        (site / f"copied/m{i}.py").write_text("X = 1\n")
    (site / "single").mkdir()
    (site / "single/one.py").write_text("Y = 1\n")
    report = audit(site_packages=[str(site)])
    assert len(report.drifts) == COLLAPSE_OVER + 2  # JSON keeps every file
    text = RENDERERS["text"](report)
    assert f"copied/  ({COLLAPSE_OVER + 1} files" in text and "copied/m0.py" not in text
    assert "single/one.py" in text


def test_undecodable_names_anywhere_in_a_drift_serialise(tmp_path):
    """A dump pattern, a writer path or a json key can carry non-UTF-8 bytes from file names."""
    from driftscan.core.values import (Area, Drift, DriftKind, DumpFiles, DumpWriter, FileCheck, Prediction, Scope,
                                 Target, Verification)
    from driftscan.report.contract import build_report

    name = os.fsdecode(b"/tmp/caf\xe9_*.pt")
    check = FileCheck(DriftKind.DEBUG_ARTIFACTS, name, "/tmp", None, {"pattern": name}, {}, "", area=Area.EXTERNAL,
                      json_changes=({"pointer": "/" + name, "op": "added", "new": name},), diff=name,
                      dumps=DumpFiles(name, (name,), 1, (DumpWriter(name, 3, "DBG101"),)))
    drift = Drift(check, Scope.EXTERNAL, True, f"rm {name}", "", Prediction.SURVIVES)
    target = Target(kind="none", venv=None, site_packages=())
    report = build_report(Verification(target, (), (check,), 0, (), ()), [drift])
    data = json.loads(RENDERERS["json"](report))
    assert data["drifts"][0]["actual"]["written_by"][0]["path"] == "/tmp/caf\\xe9_*.pt"
    assert data["drifts"][0]["artifacts"] == ["/tmp/caf\\xe9_*.pt"]
    RENDERERS["text"](report)
