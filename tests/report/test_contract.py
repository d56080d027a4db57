"""report.contract: build_report turns verify's FileChecks and classify's Drifts into the report
CI jobs read: sorted by scope, counted by kind, undecodable names made printable, and valid
against its own schema."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import jsonschema

import pytest

from driftscan.core.values import (Distribution, Drift, DriftKind, FileCheck, Origin, Prediction, PristineRef,
                                   Scope, Verification)
from driftscan.report.contract import (SCOPE_ORDER, SCHEMA_VERSION, Report, build_report, pristine_of,
                                       pristine_out, report_schema)
from fixtures.reports import DEMO, MODEL, SITE, TARGET, clean_report, every_kind_report


def test_every_kind_is_reported_and_counted():
    report = every_kind_report()
    assert {d.kind for d in report.drifts} == set(DriftKind)
    assert report.summary.drifts == len(report.drifts) == len(DriftKind)
    assert report.summary.by_kind == {k.value: 1 for k in DriftKind}
    assert report.summary.distributions == 3 and report.summary.files_checked == 1000
    assert report.summary.unverifiable == 1 and report.summary.errors == 1
    assert [u.distribution for u in report.unverifiable] == ["legacy 0.1"]
    assert report.errors[0].message == "Permission denied"
    assert not report.clean


def test_drifts_are_sorted_by_scope_then_owner():
    report = every_kind_report()
    ranks = [SCOPE_ORDER.index(d.scope) for d in report.drifts]
    assert ranks == sorted(ranks)
    package = [d for d in report.drifts if d.scope is Scope.PACKAGE]
    names = [d.distribution.name for d in package]
    assert names == sorted(names), "within a scope, by distribution name"


def test_target_and_distributions_recorded():
    report = every_kind_report(duration=1.23456)
    assert report.target.venv == TARGET.venv and report.target.site_packages == [SITE]
    assert report.target.model_dirs == [MODEL] and report.target.kind == "venv"
    assert report.target.python_version == "3.12.3"
    assert [(d.name, d.version) for d in report.distributions] == [("demo", "1.0"), ("other", "2.0"), ("proj", "0.1")]
    assert report.duration_seconds == 1.235
    assert report.schema_version == SCHEMA_VERSION and report.tool.name == "driftscan"
    assert report.hostname == os.uname().nodename


def test_drift_fields_carry_the_check():
    report = every_kind_report()
    modified = next(d for d in report.drifts if d.kind is DriftKind.MODIFIED)
    assert modified.relpath == "demo/core.py" and modified.path == f"{SITE}/demo/core.py"
    assert modified.distribution.name == "demo" and modified.distribution.installer == "pip"
    assert modified.diff.startswith("--- a/demo/core.py")
    assert [f.code for f in modified.findings] == ["DBG101"] and modified.findings[0].origin is Origin.INJECTED
    assert modified.expected["size"] == 10 and modified.actual["size"] == 12
    dumps = next(d for d in report.drifts if d.kind is DriftKind.DEBUG_ARTIFACTS)
    assert dumps.artifacts == ["/tmp/dbg_1.pt", "/tmp/dbg_2.pt"]
    assert dumps.actual["count"] == 2 and dumps.actual["written_by"][0]["line"] == 7
    assert dumps.survives_reinstall and dumps.prediction is Prediction.SURVIVES


def test_json_validates_against_the_report_schema():
    data = json.loads(every_kind_report().model_dump_json())
    jsonschema.validate(data, report_schema())
    assert Report.model_validate(data).summary.by_kind == every_kind_report().summary.by_kind


def test_a_report_read_back_has_typed_origins_and_refuses_an_unknown_one():
    """A report written as JSON (by this or an earlier driftscan: the origin has always been one of
    these strings) reads back with the enum; an origin no driftscan writes is a validation error,
    as the schema says."""
    data = json.loads(every_kind_report().model_dump_json())
    [modified] = [d for d in data["drifts"] if d["kind"] == "modified"]
    assert modified["findings"][0]["origin"] == "injected"
    modified["findings"].append({**modified["findings"][0], "origin": "upstream"})
    modified["findings"].append({**modified["findings"][0], "origin": None})
    back = Report.model_validate(data)
    [drift] = [d for d in back.drifts if d.kind is DriftKind.MODIFIED]
    assert [f.origin for f in drift.findings] == [Origin.INJECTED, Origin.UPSTREAM, None]
    assert json.loads(back.model_dump_json())["drifts"] == data["drifts"]
    modified["findings"][0]["origin"] = "vendored"
    with pytest.raises(ValueError, match="origin"):
        Report.model_validate(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, report_schema())


def test_undecodable_path_is_printable_everywhere():
    bad = os.fsdecode(b"caf\xe9.py")
    check = FileCheck(DriftKind.MODIFIED, f"{SITE}/{bad}", SITE, DEMO, {"name": bad}, {"k": [bad]},
                      diff=f"--- {bad}\n", pristine=PristineRef("wheels", f"/w/{bad}"))
    drift = Drift(check, Scope.PACKAGE, False, f"reinstall {bad}", f"evidence {bad}")
    report = build_report(Verification(TARGET, (DEMO,), (check,), 1, (), ()), [drift])
    out = report.drifts[0]
    assert out.relpath == "caf\\xe9.py" and out.path.endswith("caf\\xe9.py")
    assert out.expected == {"name": "caf\\xe9.py"} and out.actual == {"k": ["caf\\xe9.py"]}
    assert out.remedy == "reinstall caf\\xe9.py" and out.evidence == "evidence caf\\xe9.py"
    assert out.diff == "--- caf\\xe9.py\n" and out.pristine.path == "/w/caf\\xe9.py"
    report.model_dump_json().encode("utf-8")  # no lone surrogate left to fail the encoding


def test_clean_report():
    report = clean_report(files=7)
    assert report.clean and report.drifts == [] and report.summary.by_kind == {}
    assert report.summary.files_checked == 7


def _lookup(name, version, source=None, path=None, reason=None, rejected=()):
    copy = SimpleNamespace(source=SimpleNamespace(value=source), path=path, where=path) if source else None
    return SimpleNamespace(distribution=Distribution(name, version, "/m", "/s"), copy=copy, reason=reason,
                           rejected=[SimpleNamespace(source=SimpleNamespace(value=s), path=p, reason=r)
                                     for s, p, r in rejected])


def test_pristine_rows_sorted_and_found_by_name():
    rows = pristine_out([_lookup("Zeta", "1", "wheels", "/w/zeta.whl"),
                         _lookup("alpha", "2", reason="no copy found",
                                 rejected=[("pip-cache", "/c/a.whl", "hash mismatch")])])
    assert [r.distribution for r in rows] == ["alpha", "Zeta"], "sorted case-insensitively"
    assert rows[0].source is None and rows[0].reason == "no copy found"
    assert rows[0].rejected[0].reason == "hash mismatch"
    assert rows[1].source == "wheels" and rows[1].path == "/w/zeta.whl"
    report = every_kind_report(pristine=[_lookup("demo", "1.0", "uv-cache", "/c/demo")])
    assert pristine_of(report, "demo").source == "uv-cache"
    assert pristine_of(report, "absent") is None
