"""The report's classes are plain dataclasses (driftscan/core/datamodel.py) that serialise exactly as
pydantic does: the JSON of every report is pydantic's, byte for byte, and building or rendering
one imports no pydantic."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pydantic_core
import pytest
from pydantic import TypeAdapter

from driftscan.core.datamodel import _float, to_json
from driftscan.core.values import DriftKind, Prediction, Scope, Severity
from driftscan.report.contract import (DistributionRef, DriftOut, ErrorOut, FindingOut, PristineOut, PristineRefOut,
                              RejectedOut, Report, Summary, TargetInfo)


def test_floats_are_written_as_pydantic_writes_them():
    rng = random.Random(16)
    values = [0.0, -0.0, 1e-5, -1e-5, 1.5e-5, 1e-4, 1e-6, 2.5e-6, 1e15, 1e16, 1e21, 5e-324, 1.7976931348623157e308,
              math.nan, math.inf, -math.inf, 0.1, 1 / 3, 100.0, 12345.678]
    values += [rng.choice([rng.random(), rng.uniform(-1e20, 1e20), 10 ** rng.uniform(-30, 30),
                           -(10 ** rng.uniform(-8, -3)), math.ldexp(rng.random(), rng.randint(-1070, 1020))])
               for _ in range(20000)]
    wrong = [(v, _float(v), pydantic_core.to_json(v).decode()) for v in values
             if _float(v) != pydantic_core.to_json(v).decode()]
    assert wrong == []


ODD = "caf\u00e9 \u2028 \x1b[31m \"q\" \\ \x7f \t\n \U0001f600 </script>"


def _report() -> Report:
    finding = FindingOut(code="DBG101", name="torch-save-call", severity=Severity.HIGH, line=3, column=5,
                         message=f"torch.save {ODD}", snippet=ODD, origin="injected")
    drift = DriftOut(path=f"/v/{ODD}.py", relpath=f"{ODD}.py", kind=DriftKind.MODIFIED, scope=Scope.PACKAGE,
                     distribution=DistributionRef(name="six", version="1.17.0", installer="pip"),
                     survives_reinstall=False, prediction=Prediction.MAY_SURVIVE, remedy="pip install --force-reinstall six",
                     findings=[finding], expected={"sha256": "abc", "size": 12},
                     actual={"size": 13, "ratio": 1e-7, "eps": 1e-05, "big": 1e16, "nested": {"a": [1, 2.5, None, True]}},
                     json_changes=[{"pointer": "/rope_theta", "op": "changed", "old": 10000.0, "new": 5e-6}],
                     diff="--- a\n+++ b\n", pristine=PristineRefOut(source="wheels", path="/w/six.whl"),
                     byte_ranges=[[0, 4]], accepted={"reason": ODD, "entry": 0})
    return Report(target=TargetInfo(venv="/v", site_packages=["/v/lib"], kind="venv", python_version="3.12"),
                  summary=Summary(distributions=2, files_checked=10, drifts=1, unverifiable=0, errors=1,
                                  by_kind={"modified": 1}),
                  drifts=[drift], errors=[ErrorOut(path=ODD, message=ODD)],
                  pristine=[PristineOut(distribution="six", version="1.17.0", rejected=[
                      RejectedOut(source="pip-cache", path="/c", reason=ODD)])],
                  duration_seconds=0.123, hostname=None,
                  distributions=[DistributionRef(name="six", version="1.17.0")])


@pytest.mark.parametrize("indent", [None, 2])
def test_report_json_is_pydantics(indent):
    report = _report()
    ours = report.model_dump_json(indent=indent)
    theirs = TypeAdapter(Report).dump_json(report, indent=indent).decode()
    assert ours == theirs
    assert Report.model_validate_json(ours) == report
    assert report.model_dump(mode="json") == json.loads(ours)
    assert report.model_dump_json(exclude={"generated_at", "duration_seconds"}) == \
        TypeAdapter(Report).dump_json(report, exclude={"generated_at", "duration_seconds"}).decode()


def test_the_model_api_the_report_promises():
    report = _report()
    copy = report.model_copy(update={"drifts": []})
    assert copy.drifts == [] and report.drifts and copy.summary is report.summary
    assert list(Report.model_fields)[:2] == ["schema_version", "tool"]
    assert report.model_dump()["drifts"][0]["kind"] is DriftKind.MODIFIED
    assert report.model_dump(mode="json")["drifts"][0]["kind"] == "modified"
    assert Report.model_validate(report.model_dump(mode="json")) == report
    assert Report.model_json_schema()["properties"]["hostname"]["description"].startswith("the machine")
    with pytest.raises(TypeError):
        to_json({"x": object()})


def test_building_and_rendering_a_report_imports_no_pydantic(pristine_pip_venv):
    code = ("import json, sys; import driftscan.api as api; from driftscan.render import RENDERERS; "
            "from driftscan.fs.paths import line_safe; "
            f"r = api.audit(venv={str(pristine_pip_venv)!r}); "
            "[RENDERERS[f](line_safe(r) if f != 'json' else r) for f in ('text', 'json', 'markdown')]; "
            "print(json.dumps('pydantic' in sys.modules))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is False
