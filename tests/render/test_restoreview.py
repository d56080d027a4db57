"""render.restoreview: restore's result file by file with its counts, and a checkpoint's
content file by file, saying what is saved and what is not."""

from __future__ import annotations

import json

from driftscan.reinstall.checkpoint import CheckpointFile, CheckpointIndex, Written
from driftscan.reinstall.restore import Remaining, RestoreAction, RestoreReport
from driftscan.render.restoreview import (ADDED_SHOWN, RESTORE_RENDERERS, render_checkpoint_text,
                                          render_restore_json, render_restore_text)


def _action(relpath: str, action: str, status: str, **extra) -> RestoreAction:
    return RestoreAction(path=f"/v/{relpath}", relpath=relpath, action=action, kind="modified", distribution="demo",
                         version="1.0", status=status, **extra)


def _restore(dry_run: bool) -> RestoreReport:
    status = "planned" if dry_run else "restored"
    return RestoreReport(
        dry_run=dry_run, checkpoint="/cp",
        actions=[_action("demo/a.py", "rewrite", status, source="wheels /w/demo.whl"),
                 _action("demo/gone.py", "recreate", status, source="wheels /w/demo.whl", creates=["/v/demo/sub"]),
                 _action("extra.py", "remove", "planned" if dry_run else "removed"),
                 _action("demo/b.py", "rewrite", "no-original", get_original="--wheels DIR")],
        remaining=[Remaining(path="/m/c.json", relpath="c.json", kind="modified", scope="data",
                             reason="a model file: restore it from its source")],
        errors=["x: unreadable"], notes=["a note"], duration_seconds=0.25, checkpoint_in="/cps")


def test_dry_run_says_what_would_happen():
    text = render_restore_text(_restore(dry_run=True))
    lines = text.splitlines()
    assert lines[0] == "restore (dry run: nothing written)" and lines[1] == "checkpoint: /cp"
    assert any(line.split()[:3] == ["would", "rewrite", "demo/a.py"] for line in lines)
    assert "      creates the directory /v/demo/sub" in lines
    assert any(line.strip().startswith("NO ORIGINAL") and "not touched" in line for line in lines)
    assert "to restore demo's 1 file without a verified original: --wheels DIR" in lines
    assert "left as they are (1):" in lines and "could not check (1):" in lines and "note: a note" in lines
    assert lines[-1] == ("2 files would be restored, 1 added file removed; 1 not touched: no verified original "
                         "in 0.25 s; run again with --yes (a checkpoint of all drift is written first into /cps)")


def test_real_run_counts():
    last = render_restore_text(_restore(dry_run=False)).rstrip("\n").splitlines()[-1]
    assert last == ("2 files restored and verified against RECORD, 1 added file removed in 0.25 s; 0 failed; "
                    "1 not touched: no verified original; 1 left as they are")


def test_nothing_to_restore():
    text = render_restore_text(RestoreReport(dry_run=True))
    assert "  nothing to restore" in text and text.rstrip().endswith("nothing to do")


def test_restore_json_round_trips():
    report = _restore(dry_run=True)
    assert RestoreReport.model_validate(json.loads(render_restore_json(report))) == report
    assert RESTORE_RENDERERS["text"] is render_restore_text


def _file(relpath: str, kind: str = "modified", **extra) -> CheckpointFile:
    return CheckpointFile(path=f"/v/{relpath}", relpath=relpath, area="env", kind=kind, scope="package", **extra)


def test_checkpoint_text_says_what_is_saved():
    index = CheckpointIndex(files=[
        _file("demo/a.py", content="files/a", patch="p/a", original="o/a", has_patch=True, has_original=True),
        _file("demo/b.py", content="files/b", no_original="no wheel found"),
        _file("demo/big.bin", not_copied="over --max-copy"),
        _file("demo/l.py", type="symlink", symlink_target="/x/l.py"),
    ], partial=True, incomplete=["demo/b.py"], complete_with=["pip download demo==1.0"])
    text = render_checkpoint_text(Written("/cp", index))
    lines = text.splitlines()
    assert lines[0] == "checkpoint: /cp"
    assert any("demo/a.py: content, patch, original" in line for line in lines)
    assert any("demo/b.py: content, no patch, NO ORIGINAL — no wheel found" in line for line in lines)
    assert any("demo/big.bin: NOT SAVED (over --max-copy)" in line for line in lines)
    assert any("demo/l.py: symlink to /x/l.py" in line for line in lines)
    assert "4 drifted files: 1 patch, 2 copies; 1 of 4 modified package files with a verified original" \
        in lines
    assert any(line.startswith("PARTIAL: 1 modified package file with") for line in lines)
    assert "  pip download demo==1.0" in lines
    assert "partial (--allow-partial)" in render_checkpoint_text(Written("/cp", index), allow_partial=True)


def test_checkpoint_text_caps_added_files():
    index = CheckpointIndex(files=[_file(f"junk/f{k}.py", kind="added") for k in range(ADDED_SHOWN + 5)])
    text = render_checkpoint_text(Written("/cp", index))
    assert sum(1 for line in text.splitlines() if line.lstrip().startswith("added")) == ADDED_SHOWN
    assert "  ... and 5 more added files (checkpoint.json lists them)" in text


def test_every_restore_status_has_its_words_and_is_written_as_its_value():
    from driftscan.reinstall.restore import Status

    report = RestoreReport(dry_run=False, actions=[_action(f"demo/{s.value}.py", "rewrite", s) for s in Status])
    text = render_restore_text(report)
    words = {Status.PLANNED: "would rewrite", Status.RESTORED: "restored", Status.REMOVED: "removed",
             Status.FAILED: "FAILED to rewrite", Status.NO_ORIGINAL: "NO ORIGINAL", Status.UNSAVED: "NOT SAVED"}
    for status in Status:
        [line] = [line for line in text.splitlines() if f"demo/{status.value}.py" in line]
        assert line.strip().startswith(words[status]), line
    data = json.loads(render_restore_json(report))
    assert [a["status"] for a in data["actions"]] == [s.value for s in Status]
    assert [a.status for a in RestoreReport.model_validate(data).actions] == list(Status)
    assert [a.relpath for a in report.not_done] == ["demo/failed.py", "demo/no-original.py", "demo/unsaved.py"]


def test_every_reapply_status_has_its_words_and_is_written_as_its_value():
    from driftscan.reinstall.reapply import ReapplyFile, ReapplyReport, Status
    from driftscan.render.restoreview import render_reapply_text

    files = [ReapplyFile(relpath=f"demo/{s.value}.py", path=f"/v/demo/{s.value}.py", action="apply", status=s,
                         reason="why") for s in Status]
    report = ReapplyReport(dry_run=False, source="/cp", files=files)
    text = render_reapply_text(report)
    words = {Status.PLANNED: "would apply", Status.APPLIED: "apply done", Status.PARTIAL: "partly applied"}
    for status in Status:
        [line] = [line for line in text.splitlines() if line.split()[-2:] == [f"demo/{status.value}.py:", "why"]]
        assert line.strip().startswith(words.get(status, status.value)), line
    assert text.splitlines()[-1].startswith("2 files written")  # applied and partial
    data = json.loads(report.model_dump_json())
    assert [f["status"] for f in data["files"]] == [s.value for s in Status]
    assert {f.relpath for f in report.refused_or_failed} == {"demo/failed.py", "demo/refused.py"}
