"""reinstall.plan's prediction for the team's patches, and guard's pieces around them
(reinstall/guard/teampatches.py, the exit status): pure, on values built here. The real operation
is tests/e2e/test_guard_patches.py."""

from __future__ import annotations

from driftscan.core.values import Distribution, Target, TargetKind, Verdict
from driftscan.patches.apply import PatchApplyReport, PatchOut, PatchState
from driftscan.reinstall.guard.command import Recognised, Requested, Tool
from driftscan.reinstall.guard.model import GuardCommand, GuardReport
from driftscan.reinstall.guard.outcome import EXIT_FAILED_PREDICTION, exit_status
from driftscan.reinstall.guard.teampatches import rebase_lines, versions_after
from driftscan.reinstall.plan import PatchFate, PatchLookup, Plan, PlanItem, PlanSource, _patch_steps, _team_patches
from fixtures.reports import clean_report

TARGET = Target(TargetKind.VENV, "/v", ("/v/lib/site-packages",))
TOY = Distribution("toy", "1.0", "/v/lib/site-packages/toy-1.0.dist-info", "/v/lib/site-packages")
OTHER = Distribution("other", "3.0", "/v/lib/site-packages/other-3.0.dist-info", "/v/lib/site-packages")


def lookup(*patches: tuple[str, str]) -> PatchLookup:
    """The manifest as (name, exact version) pairs: ``patches/<name>@<version>.patch``."""
    return PatchLookup(lambda name, version: next((f"patches/{n}@{v}.patch" for n, v in patches
                                                   if (n, v) == (name, version)), None), directory="patches")


def toy_plan() -> Plan:
    item = PlanItem(path="/v/lib/site-packages/toy/core.py", relpath="toy/core.py", kind="patched", scope="package",
                    distribution="toy", status=Verdict.WIPED, reason="a reinstall writes the original",
                    reason_without_steps="a reinstall writes the original")
    return Plan(reinstall=["toy"], installer="pip", items=[item], audit=clean_report())


def test_same_version_is_re_applied_and_says_so_on_the_item_and_in_the_steps():
    plan = toy_plan()
    (team,) = _team_patches(plan, [TOY, OTHER], lookup(("toy", "1.0")), {"toy": "1.0", "other": "3.0"}, TARGET)
    assert team.fate is PatchFate.REAPPLIED and team.patch == team.patch_after == "patches/toy@1.0.patch"
    assert team.files == ["/v/lib/site-packages/toy/core.py"]
    assert team.command == "driftscan patch apply --venv /v --patches patches --yes"
    (item,) = plan.items
    assert item.status is Verdict.WIPED and item.patch_fate is PatchFate.REAPPLIED
    assert "patch re-applied by `driftscan patch apply`" in item.reason
    assert "patch re-applied by `driftscan patch apply`" in (item.reason_without_steps or "")
    (step,) = _patch_steps([team])
    assert "patch re-applied by `driftscan patch apply`" in step.step and step.command == team.command


def test_another_version_no_entry_matches_is_unused_with_the_rebase_step():
    plan = toy_plan()
    (team,) = _team_patches(plan, [TOY], lookup(("toy", "1.0")), {"toy": "2.0"}, TARGET)
    assert team.fate is PatchFate.UNUSED and team.patch_after is None
    assert team.command == "driftscan patch rebase toy --to 2.0"
    assert plan.items[0].patch_fate is PatchFate.UNUSED and "will be unused" in plan.items[0].reason
    (step,) = _patch_steps([team])
    assert "unused" in step.step and step.command == "driftscan patch rebase toy --to 2.0"


def test_the_rebase_step_looks_for_the_new_wheel_where_the_reinstall_takes_it():
    plan = toy_plan()
    plan.sources = [PlanSource(kind="wheel", path="/wheels/toy-2.0-py3-none-any.whl", distribution="toy")]
    (team,) = _team_patches(plan, [TOY], lookup(("toy", "1.0")), {"toy": "2.0"}, TARGET)
    assert team.command == "driftscan patch rebase toy --to 2.0 --wheels /wheels"
    plan.sources = [PlanSource(kind="find-links", path="/my wheels")]
    (team,) = _team_patches(plan, [TOY], lookup(("toy", "1.0")), {"toy": "2.0"}, TARGET)
    assert team.command == "driftscan patch rebase toy --to 2.0 --wheels '/my wheels'"


def test_an_unknown_version_and_a_patch_no_entry_lists():
    (unknown,) = _team_patches(toy_plan(), [TOY], lookup(("toy", "1.0")), {"toy": None}, TARGET)
    assert unknown.fate is PatchFate.UNKNOWN and unknown.version_after is None and "patch apply" in (unknown.command or "")
    (lost,) = _team_patches(toy_plan(), [TOY], lookup(), {"toy": "1.0"}, TARGET)
    assert lost.fate is PatchFate.LOST and lost.command is None
    assert [s.command for s in _patch_steps([lost])] == [None]
    empty = Plan(reinstall=["other"], installer="pip", audit=clean_report())
    assert _team_patches(empty, [OTHER], lookup(("toy", "1.0")), {"other": "3.0"}, TARGET) == []


def test_guard_takes_the_version_after_from_the_command():
    installed = {"toy": "1.0", "other": "3.0"}
    pinned = Recognised(Tool.PIP, (Requested("toy", "2.0"), Requested("absent", "1.0")))
    assert versions_after(pinned, installed) == {"toy": "2.0"}
    upgrade = Recognised(Tool.PIP, (Requested("toy"),), upgrade=True)
    assert versions_after(upgrade, installed) == {"toy": None}, "an upgrade without a pin: not known"
    assert versions_after(Recognised(Tool.PIP, (Requested("toy"),), forced=True), installed) == {}


def test_rebase_lines_and_guard_exit_status_with_patches():
    applied = PatchApplyReport(dry_run=False, patches=[
        PatchOut(patch="patches/toy@1.0.patch", path="/p", state=PatchState.UNUSED, distribution="toy"),
        PatchOut(patch="patches/gone@1.0.patch", path="/q", state=PatchState.UNUSED, distribution="gone")])
    assert rebase_lines(applied, {"toy": "2.0"}) == ["driftscan patch rebase toy --to 2.0"]
    own = PatchOut(patch="patches/toy@2.0.patch", path="/r", state=PatchState.APPLIED, distribution="toy")
    superseded = applied.model_copy(update={"patches": [own, *applied.patches]})
    assert rebase_lines(superseded, {"toy": "2.0"}) == [], "2.0 has its own patch: nothing to rebase"
    command = GuardCommand(argv=["pip", "install", "toy"], tool="pip", recognised=True)
    ok = GuardReport(target="/v", command=command, ran=True, exit_code=0, patch_apply=applied, patch_apply_exit=0)
    assert exit_status(ok) == 0
    loud = ok.model_copy(update={"patch_apply_exit": 1})
    assert exit_status(loud) == EXIT_FAILED_PREDICTION
    failed = ok.model_copy(update={"exit_code": 4, "patch_apply_exit": None})
    assert exit_status(failed) == 4, "the command's own failure first"
