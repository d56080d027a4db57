"""reinstall.guard.outcome: guard's pure decisions: which installed distributions a command
reinstalls, how the plan's statuses change for it, and, after it ran, whether each prediction held,
judged from the files themselves."""

from __future__ import annotations

import dataclasses
import os

from driftscan.reinstall.guard.command import Recognised, Requested, Tool, recognise
from driftscan.reinstall.guard.model import GuardCommand, GuardReport, Outcome
from driftscan.reinstall.guard.outcome import (EXIT_FAILED_PREDICTION, EXIT_INCOMPLETE, Predicted, exit_status,
                                               fingerprint, fingerprints, installed_versions, judge, leftovers,
                                               missing_source,
                                               new_drifts, not_run, other_environment, predict, reinstalled,
                                               summarise, versions)
from driftscan.core.values import Verdict
from driftscan.reinstall.plan import Plan, PlanItem
from fixtures.reports import clean_report, every_kind_report


def _item(path: str, status: str, kind: str = "modified", scope: str = "package", dist: str | None = "demo",
          relpath: str | None = None) -> PlanItem:
    return PlanItem(path=path, relpath=relpath or os.path.basename(path), kind=kind, scope=scope, distribution=dist,
                    status=status, reason=f"plan says {status}")


def _plan(*items: PlanItem) -> Plan:
    return Plan(reinstall=["demo"], installer="pip", items=list(items), audit=clean_report())


def test_installed_versions_and_reinstalled():
    installed = installed_versions(every_kind_report())
    assert installed == {"demo": "1.0", "other": "2.0", "proj": "0.1"}
    forced = Recognised(Tool.PIP, (Requested("demo"), Requested("absent")), forced=True)
    assert reinstalled(forced, installed) == (["demo"], []), "a name not installed is not reinstalled"
    upgrade = Recognised(Tool.PIP, (Requested("demo"), Requested("other", "3.0")), upgrade=True)
    assert reinstalled(upgrade, installed) == (["other"], ["demo"])
    assert reinstalled(Recognised(Tool.UV_SYNC, reinstall_all=True), installed) == (sorted(installed), [])


def test_predict_for_an_unknown_command_is_may_survive():
    plan = _plan(_item("/v/a.py", Verdict.WIPED),
                 _item("/v/b.py", Verdict.SURVIVES, kind="added", scope="environment", dist=None))
    out = predict(plan, Recognised(Tool.OTHER), [], [], False)
    assert [p.status for p in out] == [Verdict.MAY_SURVIVE, Verdict.MAY_SURVIVE]
    assert "guard does not know what this command changes" in out[0].reason


def test_predict_maybe_reinstalled_is_may_survive():
    plan = _plan(_item("/v/a.py", Verdict.WIPED))
    out = predict(plan, Recognised(Tool.PIP, (Requested("demo"),), upgrade=True), [], ["demo"], False)
    assert out[0].status == Verdict.MAY_SURVIVE and "may find nothing to do" in out[0].reason


def test_predict_dependencies_of_a_forced_install():
    plan = _plan(_item("/v/other.py", Verdict.SURVIVES, dist="other"))
    with_deps = predict(plan, Recognised(Tool.PIP, (Requested("demo"),), forced=True), ["demo"], [], False)
    assert with_deps[0].status == Verdict.MAY_SURVIVE and "dependencies" in with_deps[0].reason
    no_deps = predict(plan, Recognised(Tool.PIP, (Requested("demo"),), forced=True, no_deps=True), ["demo"], [],
                      False)
    assert no_deps[0].status == Verdict.SURVIVES


def test_other_environment_refused(tmp_path):
    command = recognise(["uv", "pip", "install", "--prefix", str(tmp_path / "elsewhere"), "x"], env={},
                        cwd=str(tmp_path))
    refusal = other_environment(command, str(tmp_path / "venv"))
    assert refusal is not None and "wrong environment" in refusal.reason
    assert refusal.command.startswith("driftscan guard --venv ")
    assert other_environment(command, str(tmp_path / "elsewhere")) is None
    assert other_environment(Recognised(Tool.PIP), str(tmp_path)) is None


def test_missing_source_in_the_commands_own_words(tmp_path):
    (tmp_path / "here").mkdir()
    wheel = recognise(["pip", "install", "--force-reinstall", "w/demo-1.0-py3-none-any.whl"], env={}, cwd=str(tmp_path))
    missing = missing_source(wheel, ["pip", "install", "--force-reinstall", "w/demo-1.0-py3-none-any.whl"],
                             str(tmp_path))
    assert missing is not None and (missing.word, missing.wheel) == ("w/demo-1.0-py3-none-any.whl", True)
    assert missing.why == "No such file or directory"
    argv = ["pip", "install", "--no-index", "--find-links=links", "demo"]
    links = missing_source(recognise(argv, env={}, cwd=str(tmp_path)), argv, str(tmp_path))
    assert links is not None and (links.word, links.wheel) == ("links", False)
    argv = ["pip", "install", "--no-index", "--find-links", "here", "demo"]
    assert missing_source(recognise(argv, env={}, cwd=str(tmp_path)), argv, str(tmp_path)) is None


def test_an_environment_guard_cannot_resolve_is_refused(tmp_path):
    """``uv --python 3.11``: uv picks the interpreter when it runs; guard says so and refuses."""
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    command = recognise(["uv", "pip", "install", "--python", "3.11", "x"], env={}, cwd=str(tmp_path))
    refusal = other_environment(command, str(tmp_path / ".venv"))
    assert refusal is not None and "cannot tell for certain" in refusal.reason and "3.11" in refusal.reason
    assert "--force" in refusal.reason
    assert other_environment(recognise(["uv", "pip", "install", "x"], env={}, cwd=str(tmp_path)),
                             str(tmp_path / ".venv")) is None


def test_fingerprint_of_each_kind_of_path(tmp_path):
    f = tmp_path / "f.py"
    f.write_bytes(b"x = 1\n")
    print_ = fingerprint(str(f))
    assert print_.type == "file" and print_.exists
    twin = tmp_path / "twin.py"
    twin.write_bytes(b"x = 1\n")
    assert fingerprint(str(twin)) == print_ and print_.value, "the same content, the same digest"
    f.write_bytes(b"x = 2\n")
    assert fingerprint(str(f)) != print_, "other content, other fingerprint"
    assert fingerprint(str(tmp_path / "absent")).type == "absent" and not fingerprint(str(tmp_path / "absent")).exists
    assert fingerprint(str(tmp_path)).type == "dir"
    os.mkfifo(tmp_path / "pipe")
    assert fingerprint(str(tmp_path / "pipe")).type == "other"
    (tmp_path / "link").symlink_to("f.py")
    link = fingerprint(str(tmp_path / "link"))
    assert link.type == "symlink" and link.value == "f.py"
    through = fingerprint(str(tmp_path / "link"), root=str(tmp_path))
    assert through.value.startswith("f.py -> "), "hashed through when the target is inside the root"


def test_judge_from_the_files(tmp_path):
    wiped = tmp_path / "wiped.py"
    kept = tmp_path / "kept.py"
    broken = tmp_path / "broken.py"
    for f in (wiped, kept, broken):
        f.write_text("edited\n")
    predicted = [Predicted(_item(str(wiped), Verdict.WIPED), Verdict.WIPED, "r"),
                 Predicted(_item(str(kept), Verdict.SURVIVES, kind="added", scope="environment", dist=None),
                           Verdict.SURVIVES, "r"),
                 Predicted(_item(str(broken), Verdict.SURVIVES, kind="added", scope="environment", dist=None),
                           Verdict.SURVIVES, "r")]
    before = {p.item.path: fingerprint(p.item.path) for p in predicted}
    wiped.unlink()  # the reinstall removed it
    broken.unlink()  # predicted to survive, but gone
    after = every_kind_report()
    template = next(d for d in after.drifts if d.kind.value == "added")
    after = dataclasses.replace(after, drifts=[dataclasses.replace(template, path=str(kept))])
    out = {p.path: p for p in judge(predicted, before, after, judged=True)}
    assert out[str(wiped)].outcome is Outcome.WIPED and out[str(wiped)].held is True
    assert out[str(kept)].outcome is Outcome.SURVIVED and out[str(kept)].held is True
    assert out[str(broken)].outcome is Outcome.WIPED and out[str(broken)].held is False
    unjudged = judge(predicted, before, after, judged=False)
    assert all(p.held is None for p in unjudged), "after a failed command no prediction is held to it"


def test_judge_dump_files(tmp_path):
    dumps = [tmp_path / f"d{k}.pt" for k in range(3)]
    for d in dumps:
        d.write_bytes(b"x")
    item = _item(str(tmp_path / "d*.pt"), Verdict.SURVIVES, kind="debug-artifacts", scope="external", dist=None)
    predicted = [Predicted(item, Verdict.SURVIVES, "r")]
    before = {item.path: tuple(str(d) for d in dumps)}
    dumps[0].unlink()
    [p] = judge(predicted, before, clean_report(), judged=True)
    assert p.outcome is Outcome.CHANGED and p.detail == "2 of 3 dump files still there" and p.held is False


def test_possible_dumps_are_judged_and_left_by_their_files(tmp_path):
    """A possible-debug-artifacts drift's path is its pattern (no file): its files decide, whatever
    the audit after the command finds (here: nothing at all)."""
    dumps = [tmp_path / f"old_{k}.pt" for k in range(3)]
    for d in dumps:
        d.write_bytes(b"tensor")
    report = every_kind_report()
    template = next(d for d in report.drifts if d.kind.value == "possible-debug-artifacts")
    pattern = str(tmp_path / "old_*.pt")
    drift = dataclasses.replace(template, path=pattern, actual={**template.actual,
                                                                "possible_artifacts": [str(d) for d in dumps]})
    plan = Plan(reinstall=["demo"], installer="pip", audit=dataclasses.replace(report, drifts=[drift]),
                items=[_item(pattern, Verdict.SURVIVES, kind="possible-debug-artifacts", scope="external",
                             dist=None)])
    predicted = [Predicted(plan.items[0], Verdict.SURVIVES, "r")]
    before = fingerprints(predicted, plan)
    assert before == {pattern: tuple(str(d) for d in dumps)}
    [p] = judge(predicted, before, clean_report(), judged=True)
    assert (p.outcome, p.held, p.detail) == (Outcome.SURVIVED, True, "all 3 dump files still there")
    dumps[2].unlink()
    [left] = leftovers(plan, clean_report(), None).dumps
    assert (left.files, left.gone, left.possible) == ([str(dumps[0]), str(dumps[1])], 1, True)


def test_new_drifts_and_versions():
    before = every_kind_report()
    after = dataclasses.replace(before, distributions=[dataclasses.replace(d, version="9.9") if d.name == "demo" else d
                                                       for d in before.distributions])
    moved = versions(before, after, asked={"demo"})
    assert [(v.name, v.before, v.after, v.asked) for v in moved] == [("demo", "1.0", "9.9", True)]
    extra = dataclasses.replace(before.drifts[0], path="/new/file.py")
    fresh = new_drifts(before, dataclasses.replace(after, drifts=[*after.drifts, extra]))
    assert [d.path for d in fresh] == ["/new/file.py"]


def _guard_report(**extra) -> GuardReport:
    return GuardReport(target="/v", command=GuardCommand(argv=["pip", "install", "x"], tool="pip", recognised=True),
                       **extra)


def test_summarise_and_exit_status():
    predicted = [Predicted(_item("/v/a.py", Verdict.WIPED), Verdict.WIPED, "r")]
    report = _guard_report(ran=False, predictions=not_run(predicted))
    summarise(report)
    assert report.summary.predictions == 1 and report.summary.unjudged == 1
    assert exit_status(report) == EXIT_INCOMPLETE, "not run: incomplete"
    report = _guard_report(ran=True, exit_code=3)
    assert exit_status(report) == 3, "the command's own failure first"
    held = _guard_report(ran=True, exit_code=0,
                         predictions=[p.model_copy(update={"outcome": Outcome.WIPED, "held": True})
                                      for p in not_run(predicted)])
    summarise(held)
    assert exit_status(held) == 0
    failed = _guard_report(ran=True, exit_code=0, errors=["x"],
                           predictions=[p.model_copy(update={"outcome": Outcome.SURVIVED, "held": False})
                                        for p in not_run(predicted)])
    summarise(failed)
    assert failed.summary.failed == 1
    assert exit_status(failed) == EXIT_FAILED_PREDICTION | EXIT_INCOMPLETE
