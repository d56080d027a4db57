"""reinstall.guard.model: guard's result, a versioned model with a published JSON Schema."""

from __future__ import annotations

import json

import jsonschema
import pydantic
import pytest

from driftscan.reinstall.guard.model import (GuardCommand, GuardPrediction, GuardReport, LeftDump, Leftovers,
                                             Outcome)


def _report() -> GuardReport:
    return GuardReport(
        target="/v", command=GuardCommand(argv=["uv", "pip", "install", "x"], tool="uv pip", recognised=True,
                                          reinstalls=["x"]),
        ran=True, exit_code=0,
        predictions=[GuardPrediction(path="/v/x.py", relpath="x.py", kind="modified", scope="package",
                                     distribution="x", prediction="WIPED", reason="r", outcome=Outcome.WIPED,
                                     held=True)],
        leftovers=Leftovers(dumps=[LeftDump(pattern="/tmp/d*.pt", files=["/tmp/d1.pt"], bytes=3)]))


def test_json_validates_against_its_schema_and_round_trips():
    report = _report()
    data = json.loads(report.model_dump_json())
    jsonschema.validate(data, GuardReport.model_json_schema())
    assert GuardReport.model_validate(data) == report
    assert data["schema_version"] == "1" and data["predictions"][0]["outcome"] == "wiped"


def test_prediction_values_are_closed():
    with pytest.raises(pydantic.ValidationError):
        GuardPrediction(path="p", relpath="p", kind="modified", scope="package", prediction="PROBABLY",
                        reason="r", outcome=Outcome.WIPED, held=None)
    assert {o.value for o in Outcome} == {"wiped", "survived", "changed", "unchecked", "not-run"}


def test_defaults_of_a_command_not_run():
    report = GuardReport(target=None, command=GuardCommand(argv=[], tool="other", recognised=False), ran=False)
    assert report.predictions == [] and report.leftovers == Leftovers() and report.summary.predictions == 0
    assert report.exit_code is None and report.refused == []


def test_predictions_and_plan_statuses_are_one_enum_written_in_their_words():
    from driftscan.core.values import Verdict
    from driftscan.reinstall.plan import PlanItem

    assert [v.value for v in Verdict] == ["WIPED", "SURVIVES", "MAY SURVIVE"]
    for verdict in Verdict:
        p = GuardPrediction(path="p", relpath="p", kind="modified", scope="package", prediction=verdict.value,
                            reason="r", outcome=Outcome.WIPED, held=None)
        item = PlanItem.model_validate_json(json.dumps({
            "path": "p", "relpath": "p", "kind": "modified", "scope": "package", "distribution": None,
            "status": verdict.value, "reason": "r", "status_without_steps": verdict.value}))
        assert p.prediction is verdict and item.status is verdict and item.status_without_steps is verdict
        assert json.loads(p.model_dump_json())["prediction"] == verdict.value
        assert json.loads(item.model_dump_json())["status"] == verdict.value
    with pytest.raises(pydantic.ValidationError):
        PlanItem(path="p", relpath="p", kind="modified", scope="package", distribution=None, status="wiped",
                 reason="r")
    # The published schemas say what they said before: an enum of the words for guard, a string for plan.
    schema = GuardReport.model_json_schema()["$defs"]["GuardPrediction"]["properties"]["prediction"]
    assert schema == {"enum": ["WIPED", "SURVIVES", "MAY SURVIVE"], "title": "Prediction", "type": "string"}
    status = PlanItem.model_json_schema()["properties"]["status"]
    assert {k: v for k, v in status.items() if k != "description"} == {"title": "Status", "type": "string"}
