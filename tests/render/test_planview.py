"""render.planview: a plan as a to-do list (wiped first, then what may survive, then what
survives; numbered steps with their commands; a count line last) or as JSON."""

from __future__ import annotations

import json

import pytest

from driftscan.reinstall.plan import Audited, ExpectationResult, Plan, PlanEstimate, build_plan
from driftscan.render.planview import PLAN_RENDERERS, render_plan_json, render_plan_text
from fixtures.reports import DEMO, OTHER, PROJ, TARGET, clean_report, drift_of, every_kind_checks, every_kind_report


@pytest.fixture(scope="module")
def plan() -> Plan:
    drifts = [drift_of(c) for c in every_kind_checks().values()]
    return build_plan(Audited(every_kind_report(), drifts, TARGET, [DEMO, OTHER, PROJ]), ["demo"], None)


def test_every_item_has_its_line_wiped_first(plan):
    text = render_plan_text(plan)
    lines = text.splitlines()
    assert lines[0] == f"Plan: reinstall demo with {plan.installer}"
    item_lines = [line for line in lines if line.lstrip().startswith(("WIPED", "SURVIVES", "MAY SURVIVE"))]
    assert len(item_lines) == len(plan.items)
    statuses = [line.split()[0] for line in item_lines]
    order = {"WIPED": 0, "MAY": 1, "SURVIVES": 2}
    assert [order[s] for s in statuses] == sorted(order[s] for s in statuses)
    for item in plan.items:
        assert any(f"{item.relpath} ({item.kind})" in line and f"[{item.scope}]" in line for line in item_lines), item
        assert item.reason in text


def test_steps_are_numbered_with_their_commands(plan):
    text = render_plan_text(plan)
    for n, step in enumerate(plan.steps, 1):
        assert f"  {n}. {step.step}" in text
        if step.command:
            assert f"       $ {step.command}" in text
    assert any("--reinstall" in (s.command or "") or "--force-reinstall" in (s.command or "") for s in plan.steps)


def test_count_line_matches_the_plan(plan):
    last = render_plan_text(plan).rstrip("\n").splitlines()[-1]
    assert last == f"{len(plan.wiped)} wiped, {len(plan.survives)} survive, {len(plan.may_survive)} may survive"
    assert len(plan.wiped) + len(plan.survives) + len(plan.may_survive) == len(plan.items)


def test_nothing_drifted_and_expectations_and_estimate():
    plan = Plan(reinstall=["demo"], installer="pip", audit=clean_report(),
                expectations=[ExpectationResult(name="fast path on", file="a.py", check="contains",
                                                holds_now=True, holds_after=None, reason="the file is not read back")],
                estimate=PlanEstimate(installer="pip", seconds=12.4, files=100, bytes=10, basis="measured"))
    text = render_plan_text(plan)
    assert "  nothing has drifted: the reinstall changes no file" in text
    assert "     yes → unknown  fast path on" in text
    assert "Reinstall time: about 12 s with pip (measured; an estimate)" in text
    assert text.rstrip().endswith("0 wiped, 0 survive, 0 may survive")


def test_json_round_trips(plan):
    out = render_plan_json(plan)
    assert Plan.model_validate(json.loads(out)) == plan
    assert PLAN_RENDERERS == {"text": render_plan_text, "json": render_plan_json}
