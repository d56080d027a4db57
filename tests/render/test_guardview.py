"""render.guardview: guard's report at a glance: the command line, refusals, one line per
prediction (mark, prediction → outcome), what is left, the reapply line, a count line."""

from __future__ import annotations

import json

from driftscan.reinstall.guard.model import (GuardCheckpoint, GuardCommand, GuardPrediction, GuardReport,
                                             GuardSummary, LeftArchive, LeftDump, Leftovers, NewDrift, Outcome,
                                             Refusal, VersionMove)
from driftscan.render.guardview import GUARD_RENDERERS, render_guard_json, render_guard_text


def _prediction(relpath: str, prediction: str, outcome: Outcome, held: bool | None) -> GuardPrediction:
    return GuardPrediction(path=f"/v/{relpath}", relpath=relpath, kind="modified", scope="package",
                           distribution="demo", prediction=prediction, reason=f"because {relpath}", outcome=outcome,
                           detail=f"detail {relpath}", held=held)


def _report() -> GuardReport:
    return GuardReport(
        target="/v", chosen_because="the active venv",
        command=GuardCommand(argv=["pip", "install", "--force-reinstall", "demo"], tool="pip", recognised=True,
                             reinstalls=["demo"], forced=True, source="index", source_why="the index",
                             notes=["a note"]),
        ran=True, exit_code=0, command_seconds=1.5,
        checkpoint=GuardCheckpoint(path="/cp", files=3, patches=2, partial=True, without_original=["demo/x.py"],
                                   complete_with=["pip download ..."]),
        predictions=[_prediction("survived.py", "SURVIVES", Outcome.SURVIVED, True),
                     _prediction("wrong.py", "WIPED", Outcome.SURVIVED, False),
                     _prediction("maybe.py", "MAY SURVIVE", Outcome.WIPED, True)],
        versions=[VersionMove(name="dep", before="1.0", after="2.0", asked=False)],
        new_drifts=[NewDrift(path="/v/n.py", relpath="n.py", kind="modified", scope="package", distribution="demo",
                             findings=2)],
        leftovers=Leftovers(dumps=[LeftDump(pattern="/tmp/d*.pt", files=["/tmp/d1.pt"], bytes=2_000_000, gone=1,
                                            remedy="rm -- /tmp/d1.pt")],
                            uv_cache=[LeftArchive(distribution="demo", relpath="demo/x.py", edited_copy="/c/x.py",
                                                  archive="/c/archive-v0/a", command="uv cache clean demo")],
                            added=["/v/extra.py"]),
        reapply="driftscan reapply /cp --venv /v --yes",
        summary=GuardSummary(predictions=3, held=2, failed=1),
    )


def test_text_at_a_glance():
    text = render_guard_text(_report())
    lines = text.splitlines()
    assert lines[0] == "guard: /v (the active venv)"
    assert lines[1] == "command: pip, reinstalls demo (forced); source: index (the index)"
    assert "  note: a note" in lines
    assert "checkpoint: /cp (3 files, 2 patches, PARTIAL)" in lines
    assert "  no patch and no original: demo/x.py" in lines
    assert "ran: exit 0 in 1.5 s" in lines
    preds = [line for line in lines if line.startswith(("  ✓", "  ✗", "  ·"))]
    assert [line.split()[0] for line in preds] == ["✗", "✓", "✓"], "wiped first, then may survive, then survives"
    assert "wrong.py" in preds[0] and "WIPED" in preds[0] and "→ survived" in preds[0]
    assert "      predicted because: because wrong.py" in lines, "a failed prediction says why it was made"
    assert "predicted because: because survived.py" not in text
    assert "  dep: 1.0 → 2.0   ! the command did not name it" in lines
    assert "  ! [package] demo: n.py (modified, 2 debug findings)" in lines
    assert "  dumps: 1 file matching /tmp/d*.pt (2.0 MB, 1 gone)" in lines
    assert "      $ uv cache clean demo" in lines and "  added: /v/extra.py" in lines
    assert "  $ driftscan reapply /cp --venv /v --yes" in lines
    assert lines[-1] == "3 predictions: 2 held, 1 failed, 0 not judged"


def test_refused_and_unrecognised():
    report = _report().model_copy(update={
        "ran": False, "exit_code": None, "predictions": [],
        "refused": [Refusal(reason="debug code comes back", command="uv cache clean demo")],
        "command": GuardCommand(argv=["make"], tool="other", recognised=False)})
    text = render_guard_text(report)
    assert "command: not an install guard recognises (other): every drift may survive it" in text
    assert "REFUSED: the command was not run:\n  - debug code comes back\n      $ uv cache clean demo" in text
    assert "ran:" not in text and "Predictions: nothing had drifted" in text
    forced = render_guard_text(report.model_copy(update={"forced": True}))
    assert "started anyway (--force) despite:" in forced


def test_after_a_failed_command_only_the_dry_run_of_reapply_is_given():
    report = _report().model_copy(update={
        "exit_code": 3, "reapply": None, "reapply_dry_run": "driftscan reapply /cp --venv /v",
        "leftovers": Leftovers(dumps=[LeftDump(pattern="/tmp/d*.pt", files=["/tmp/d1.pt"], bytes=0, possible=True,
                                               remedy="review them (ls -l -- /tmp/d1.pt)")])})
    text = render_guard_text(report)
    assert "--yes" not in text, "no line that writes, after a failed command"
    assert "The command failed: what reapply would do now is unknown" in text
    assert "\n  $ driftscan reapply /cp --venv /v\n" in text
    assert "  possible dumps: 1 file matching /tmp/d*.pt (0 bytes)" in text.splitlines()


def test_json_round_trips():
    report = _report()
    assert GuardReport.model_validate(json.loads(render_guard_json(report))) == report
    assert GUARD_RENDERERS == {"text": render_guard_text, "json": render_guard_json}
