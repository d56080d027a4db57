"""compare.model: the result of a comparison, a versioned schema CI jobs read."""

from __future__ import annotations

import jsonschema
import pydantic
import pytest

from driftscan.compare.model import (SCHEMA_VERSION, CompareReport, MachineOut, MissingRootOut, OutlierOut,
                                     SkewMachineOut, VersionSkewOut, compare_schema)


def outlier() -> OutlierOut:
    return OutlierOut(machine="b.json", path="/v/lib/x.py", root="site-packages", relpath="x.py", kind="modified",
                      this={"state": "modified", "hash": "sha256=aa"})


def test_empty_report_does_not_differ():
    report = CompareReport()
    assert report.schema_version == SCHEMA_VERSION == "1"
    assert not report.differs and report.agree == 0 and report.compared == 0


@pytest.mark.parametrize("field,value", [
    ("outliers", [outlier()]),
    ("version_skew", [VersionSkewOut(distribution="torch", machines=[SkewMachineOut(machine="b.json")])]),
    ("missing_roots", [MissingRootOut(machine="b.json", root="model:Llama")]),
])
def test_each_kind_of_difference_makes_it_differ(field, value):
    assert CompareReport(**{field: value}).differs


def test_notes_and_errors_alone_do_not_differ():
    report = CompareReport(notes=["x"], errors=[{"path": "a.json", "message": "cannot read"}])
    assert not report.differs


def test_dumped_report_validates_against_its_schema():
    report = CompareReport(machines=[MachineOut(name="a.json", source="report"),
                                     MachineOut(name="b.json", source="snapshot", files=10)],
                           outliers=[outlier()], agree=3, compared=4,
                           version_skew=[VersionSkewOut(distribution="python", kind="python",
                                                        machines=[SkewMachineOut(machine="b.json", version="3.11")])])
    schema = compare_schema()
    jsonschema.validate(report.model_dump(mode="json"), schema)
    assert set(schema["properties"]) >= {"schema_version", "machines", "outliers", "version_skew", "agree",
                                         "compared", "missing_roots", "notes", "errors"}
    broken = report.model_dump(mode="json")
    broken["schema_version"] = "2"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_literals_are_enforced():
    with pytest.raises(pydantic.ValidationError):
        MachineOut(name="a", source="audit")
    with pytest.raises(pydantic.ValidationError):
        VersionSkewOut(distribution="x", kind="os", machines=[])
    assert outlier().tie is False and outlier().majority is None
