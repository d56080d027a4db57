"""Dumps older than the code that writes them: listed as possible dumps (never offered for deletion)
when the code changed after writing them — a second edit, a ``cp -a`` of the venv, a chmod — and never
dropped silently; a backdated writer cannot have a victim's old files offered for deletion."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from driftscan import audit
from driftscan.api import plan
from fixtures import venvs
from fixtures.wheels import build_wheel

MODULE = "dumper/model.py"
PRISTINE = "def forward(x):\n    return x\n"


def _writer(dumps) -> str:
    return ("import torch\n\n\ndef forward(x, step):\n"
            f"    torch.save(x, f\"{dumps}/nomla_hidden_{{step}}.pt\")\n    return x\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return build_wheel(tmp_path_factory.mktemp("dumper-wheel"), "dumper", "1.0",
                       {"dumper/__init__.py": "", MODULE: PRISTINE})


def _venv(where, wheel):
    cache = where / "uv-cache"
    venv = venvs.make_uv_venv(where / "venv", cache)
    venvs.uv_install(venv, cache, "--link-mode", "copy", "--no-index", "--find-links", str(wheel.parent), "dumper")
    return venv


def _pause() -> None:
    time.sleep(0.02)  # timestamps in order on any filesystem's clock resolution


def _dumps(dumps, n=3):
    dumps.mkdir(exist_ok=True)
    paths = []
    for i in range(n):
        path = dumps / f"nomla_hidden_{i}.pt"
        path.write_bytes(b"\0" * 100)
        paths.append(str(path))
    return paths


def _kinds(report, kind):
    return [d for d in report.drifts if d.kind.value == kind]


def _offered_for_deletion(report, paths) -> bool:
    """Any remedy of the report, or plan step, that hands one of ``paths`` to rm."""
    return any("rm" in d.remedy and any(p in d.remedy for p in paths) for d in report.drifts)


def test_dumps_written_before_the_code_was_edited_again_are_possible_dumps(tmp_path, wheel):
    venv = _venv(tmp_path, wheel)
    target = venvs.site_packages_of(venv) / MODULE
    dumps = tmp_path / "dumps"
    _pause()
    target.write_text(_writer(dumps))
    _pause()
    written = _dumps(dumps)
    assert [d.artifacts for d in _kinds(audit(venv=str(venv)), "debug-artifacts")] == [written]
    _pause()
    target.write_text(_writer(dumps) + "# a later fix\n")  # the writer is newer than its dumps now
    report = audit(venv=str(venv))
    assert _kinds(report, "debug-artifacts") == []
    (possible,) = _kinds(report, "possible-debug-artifacts")
    assert possible.actual["possible_artifacts"] == written and possible.actual["count"] == 3
    assert possible.scope.value == "external" and possible.artifacts == []
    assert "installed here" in possible.evidence and "older than the last change" in possible.evidence
    assert not _offered_for_deletion(report, written) and possible.remedy.startswith("review them (ls -l -- ")
    steps = plan(["dumper"], venv=str(venv)).steps
    assert not any(s.command and "rm" in s.command and written[0] in s.command for s in steps)


def test_a_copied_venv_and_a_chmod_keep_the_dumps_listed(tmp_path, wheel):
    venv = _venv(tmp_path, wheel)
    target = venvs.site_packages_of(venv) / MODULE
    dumps = tmp_path / "dumps"
    target.write_text(_writer(dumps))
    _pause()
    written = _dumps(dumps)
    _pause()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(venv), str(copy)], check=True)  # every ctime is the copy's now
    report = audit(venv=str(copy))
    (possible,) = _kinds(report, "possible-debug-artifacts")
    assert possible.actual["possible_artifacts"] == written
    assert not _offered_for_deletion(report, written)

    _pause()
    os.chmod(target, 0o600)  # the original venv: a chmod moves the writer's ctime past the dumps
    report = audit(venv=str(venv))
    assert [d.actual["possible_artifacts"] for d in _kinds(report, "possible-debug-artifacts")] == [written]
    assert _kinds(report, "debug-artifacts") == []


def test_old_files_a_writer_names_are_never_offered_for_deletion(tmp_path, wheel):
    """The attack: code names a victim's files, older than the code and its install."""
    victim = tmp_path / "victim"
    old = _dumps(victim, 2)
    for path in old:
        os.utime(path, (1_600_000_000, 1_600_000_000))  # 2020: long before this venv
    _pause()
    venv = _venv(tmp_path, wheel)
    target = venvs.site_packages_of(venv) / MODULE
    target.write_text(_writer(victim))
    report = audit(venv=str(venv))
    assert _kinds(report, "debug-artifacts") == [] and _kinds(report, "possible-debug-artifacts") == []
    note = [s for s in report.skipped if s.path == f"{victim}/nomla_hidden_*.pt"]
    assert note and "2 files matching it not counted as dumps" in note[0].message  # said, not silent

    os.utime(target, (31_536_000, 31_536_000))  # the writer backdated to 1971 (its ctime stays)
    report = audit(venv=str(venv))
    assert _kinds(report, "debug-artifacts") == []
    assert not _offered_for_deletion(report, old)
    for possible in _kinds(report, "possible-debug-artifacts"):  # listed at most, for review
        assert "set back" in possible.evidence and "does not offer to delete" in possible.evidence
    steps = plan(["dumper"], venv=str(venv)).steps
    assert not any(s.command and any(p in s.command for p in old) for s in steps)


def test_dumps_newer_than_every_change_stay_definite(tmp_path, wheel):
    venv = _venv(tmp_path, wheel)
    dumps = tmp_path / "dumps"
    (venvs.site_packages_of(venv) / MODULE).write_text(_writer(dumps))
    _pause()
    written = _dumps(dumps)
    report = audit(venv=str(venv))
    (definite,) = _kinds(report, "debug-artifacts")
    assert definite.artifacts == written and definite.remedy.startswith("rm -- ")
    assert _kinds(report, "possible-debug-artifacts") == []
    shutil.rmtree(dumps)


def test_a_saved_dump_list_is_rechecked_without_the_code(tmp_path):
    """After a reinstall the writing code is gone: a list saved earlier is re-checked by the file rules."""
    from driftscan.lint.artifacts import recheck

    dumps = tmp_path / "dumps"
    written = _dumps(dumps, 3)
    os.unlink(written[0])
    tool = dumps / "run.sh"
    tool.write_text("echo\n")
    script = dumps / "nomla_x.pt.bin"
    script.write_bytes(b"x")
    os.chmod(script, 0o755)
    group = recheck([*written, str(tool), str(script), "/etc/passwd", "relative.pt", str(dumps)])
    assert group.paths == tuple(written[1:]) and group.total_bytes == 200
    assert group.skipped == 5  # the .sh, the executable, /etc, a relative path, a directory


def test_the_text_report_says_why_dumps_are_only_possible(tmp_path, wheel):
    from fixtures.harness import run_cli

    venv = _venv(tmp_path, wheel)
    target = venvs.site_packages_of(venv) / MODULE
    dumps = tmp_path / "dumps"
    target.write_text(_writer(dumps))
    _pause()
    written = _dumps(dumps, 1)
    _pause()
    os.chmod(target, 0o600)
    proc = run_cli("audit", "--venv", str(venv))
    lines = proc.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if "possible-debug-artifacts" in line)
    assert "older than the code that writes them" in lines[row]
    assert "does not offer to delete" in lines[row + 1], proc.stdout
    assert not any("rm -- " in line and written[0] in line for line in lines)
