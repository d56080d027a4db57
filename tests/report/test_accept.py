"""Accepted drift: `driftscan accept`, [[accept]] / [[tool.driftscan.accept]] entries, stale and
unused entries, configuration found from the working directory upward, malformed entries."""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftscan.report.accept import AcceptEntry, apply_accepted, counted, matches
from driftscan.config.settings import load_config
from driftscan.core.errors import ConfigError
from driftscan.report.contract import DriftOut, Report, Summary, TargetInfo
from fixtures.harness import run_cli
from fixtures.venvs import modern_pip_install, site_packages_of
from fixtures.wheels import build_wheel

LOADER = "accpkg/loader.py"
OTHER = "accpkg/other.py"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A real venv (no pip in it) with accpkg installed by a real pip from a built wheel."""
    base = tmp_path_factory.mktemp("accept-venv")
    house = base / "house"
    build_wheel(house, "accpkg", "1.0", {"accpkg/__init__.py": "", LOADER: "def load(path):\n    return open(path)\n",
                                         OTHER: "LIMIT = 1\n", "accpkg/clean.py": "X = 1\n"})
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    modern_pip_install(venv, "--no-index", "--find-links", str(house), "accpkg")
    return venv


@pytest.fixture
def venv(installed, tmp_path) -> Path:
    """A copy of the installed venv with two patched files."""
    copy = tmp_path / "venv"
    shutil.copytree(installed, copy, symlinks=True)
    sp = site_packages_of(copy)
    (sp / LOADER).write_text("def load(path):\n    return open(path, 'rb')  # GGUF\n")
    # Another size: a same-size edit in the second pip installed it would also leave a stale pyc.
    (sp / OTHER).write_text("LIMIT = 22\n")
    return copy


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def audit(venv: Path, cwd: Path, *extra: str) -> tuple[int, dict, str]:
    proc = run_cli("audit", "--venv", str(venv), "--no-pristine", "--format", "json", *extra, cwd=str(cwd))
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def by_relpath(report: dict) -> dict[str, dict]:
    return {d["relpath"]: d for d in report["drifts"]}


def test_accept_turns_the_audit_green_and_an_edit_makes_it_stale(venv, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    code, report, _ = audit(venv, project)
    assert code == 1 and set(by_relpath(report)) == {LOADER, OTHER}

    proc = run_cli("accept", LOADER, OTHER, "--reason", "GGUF loader patch, kept on purpose", "--venv", str(venv),
                   cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    config = project / "driftscan.toml"
    sp = site_packages_of(venv)
    text = config.read_text()
    assert text.count("[[accept]]") == 2 and sha(sp / LOADER) in text and sha(sp / OTHER) in text

    code, report, _ = audit(venv, project)
    assert code == 0
    drifts = by_relpath(report)
    assert drifts[LOADER]["accepted"]["reason"] == "GGUF loader patch, kept on purpose"
    assert {drifts[LOADER]["accepted"]["entry"], drifts[OTHER]["accepted"]["entry"]} == {0, 1}
    assert report["summary"]["accepted"] == 2 and report["summary"]["drifts"] == 2  # still in the report
    assert report["stale_accepted"] == [] and report["unused_accepted"] == []
    text_out = run_cli("audit", "--venv", str(venv), "--no-pristine", cwd=str(project))
    assert text_out.returncode == 0 and text_out.stdout.count("ACCEPTED") == 2, text_out.stdout

    with open(sp / LOADER, "a") as f:
        f.write("DEBUG = True\n")
    code, report, _ = audit(venv, project)
    assert code == 1
    drifts = by_relpath(report)
    assert drifts[LOADER]["accepted"] is None and drifts[OTHER]["accepted"] is not None
    [stale] = report["stale_accepted"]
    assert stale["path"] == LOADER and stale["file"] == str(sp / LOADER)
    assert stale["why"] == f"the file no longer has that sha256 (now {sha(sp / LOADER)})"
    text_out = run_cli("audit", "--venv", str(venv), "--no-pristine", cwd=str(project))
    assert text_out.returncode == 1 and "stale accepted entries (1)" in text_out.stdout
    assert f"accept[{stale['entry']}] {LOADER}: the file no longer has that sha256" in text_out.stdout

    # Accepting the new content adds an entry; the old one then accepts nothing: unused, not stale.
    assert run_cli("accept", LOADER, "--reason", "again", "--venv", str(venv), cwd=str(project)).returncode == 0
    code, report, _ = audit(venv, project)
    assert code == 0 and report["stale_accepted"] == []
    assert [u["path"] for u in report["unused_accepted"]] == [LOADER]


def test_an_expired_entry_is_stale(venv, tmp_path):
    sp = site_packages_of(venv)
    (tmp_path / "driftscan.toml").write_text(
        f'[[accept]]\npath = "{LOADER}"\nsha256 = "{sha(sp / LOADER)}"\nreason = "until the fix lands"\n'
        "expires = 2020-01-01\n\n"
        f'[[accept]]\npath = "accpkg/o*.py"\nreason = "the rest"\nexpires = 2999-01-01\n')
    code, report, _ = audit(venv, tmp_path)
    assert code == 1
    drifts = by_relpath(report)
    assert drifts[LOADER]["accepted"] is None and drifts[OTHER]["accepted"]["entry"] == 1
    assert [(s["entry"], s["why"]) for s in report["stale_accepted"]] == [(0, "expired 2020-01-01")]


def _drift(relpath: str, path: str, kind: str = "modified") -> DriftOut:
    return DriftOut(path=path, relpath=relpath, kind=kind, scope="package", survives_reinstall=False, remedy="")


def _report(*drifts: DriftOut) -> Report:
    return Report(target=TargetInfo(), summary=Summary(distributions=1, files_checked=1, drifts=len(drifts),
                                                       unverifiable=0, errors=0), drifts=list(drifts))


def test_expiry_is_the_first_day_the_entry_no_longer_holds(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("x = 1\n")
    report = _report(_drift("pkg/x.py", str(f)))
    entry = AcceptEntry(path="pkg/x.py", reason="r", expires=datetime.date(2027, 3, 1))
    before = apply_accepted(report, [entry], today=datetime.date(2027, 2, 28))
    assert before.drifts[0].accepted == {"reason": "r", "entry": 0, "path": "pkg/x.py"} and counted(before) == []
    on = apply_accepted(report, [entry], today=datetime.date(2027, 3, 1))
    assert on.drifts[0].accepted is None and counted(on) == on.drifts
    assert [s.why for s in on.stale_accepted] == ["expired 2027-03-01"]
    assert on.summary.accepted == 0 and before.summary.accepted == 1


def test_unused_entries_and_missing_files(tmp_path):
    gone = tmp_path / "gone.py"  # a missing file: only an entry without sha256 accepts it
    report = _report(_drift("pkg/gone.py", str(gone), "missing"))
    entries = [AcceptEntry(path="pkg/gone.py", sha256="0" * 64, reason="pinned"),
               AcceptEntry(path="pkg/nothing-*.py", reason="matches nothing"),
               AcceptEntry(path=str(gone), reason="any content")]
    out = apply_accepted(report, entries, today=datetime.date(2026, 1, 1))
    assert out.drifts[0].accepted["entry"] == 2
    assert out.stale_accepted == []  # entry 0 is not about a file another entry accepts
    assert [(u.entry, u.path) for u in out.unused_accepted] == [(0, "pkg/gone.py"), (1, "pkg/nothing-*.py")]
    alone = apply_accepted(report, entries[:1], today=datetime.date(2026, 1, 1))
    assert alone.drifts[0].accepted is None
    assert alone.stale_accepted[0].why.startswith("the file is missing; an entry with sha256 accepts only")


@pytest.mark.parametrize(("pattern", "relpath", "expected"), [
    ("vllm/*.py", "vllm/a.py", True),
    ("vllm/*.py", "vllm/sub/a.py", False),  # * does not cross /
    ("vllm/**/a.py", "vllm/a.py", True),  # **/ may be no directory at all
    ("vllm/**/a.py", "vllm/x/y/a.py", True),
    ("vllm/**", "vllm/x/y/a.py", True),
    ("vllm/?.py", "vllm/ab.py", False),
    ("vllm/[ab].py", "vllm/b.py", True),
    ("vllm/[!ab].py", "vllm/b.py", False),
    ("vllm/a.py", "vllm/a.py", True),
    ("./vllm/a.py", "vllm/a.py", True),
    ("a.py", "vllm/a.py", False),  # a relpath is the whole relpath, not a suffix
])
def test_glob_semantics(pattern, relpath, expected):
    assert matches(pattern, _drift(relpath, "/venv/lib/site-packages/" + relpath)) is expected


def test_an_absolute_entry_path_is_compared_with_the_absolute_path():
    drift = _drift("vllm/a.py", "/venv/lib/site-packages/vllm/a.py")
    assert matches("/venv/lib/site-packages/vllm/a.py", drift)
    assert matches("/venv/**/vllm/*.py", drift)
    assert not matches("/other/vllm/a.py", drift)


PYPROJECT = """\
# The project's own comment, kept as written.
[project]
name = "demo"   # trailing comment
version = "1.0"

[tool.driftscan]
# what we scan
select = ["DBG1"]

# mypy's settings below
[tool.mypy]
strict = true
"""


def _only_insertions(old: str, new: str) -> list[str]:
    """The lines ``new`` adds; fails if anything of ``old`` changed or moved."""
    added = []
    matcher = difflib.SequenceMatcher(a=old.splitlines(keepends=True), b=new.splitlines(keepends=True), autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        assert op in ("equal", "insert"), (op, old.splitlines()[a1:a2], new.splitlines()[b1:b2])
        if op == "insert":
            added += new.splitlines()[b1:b2]
    return added


def test_accept_keeps_a_pyproject_byte_for_byte_but_the_entries(venv, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text(PYPROJECT)
    os.chmod(pyproject, 0o640)
    proc = run_cli("accept", LOADER, "--reason", "kept", "--expires", "2999-12-31", "--venv", str(venv),
                   cwd=str(project))
    assert proc.returncode == 0, proc.stderr
    new = pyproject.read_text()
    added = _only_insertions(PYPROJECT, new)
    assert added == ["[[tool.driftscan.accept]]", f'path = "{LOADER}"', f'sha256 = "{sha(site_packages_of(venv) / LOADER)}"',
                     'reason = "kept"', "expires = 2999-12-31", ""]
    # After driftscan's own table, before the comment that introduces [tool.mypy].
    assert new.index("[[tool.driftscan.accept]]") < new.index("# mypy's settings below")
    assert os.stat(pyproject).st_mode & 0o777 == 0o640  # the file's permissions kept
    assert not (project / "driftscan.toml").exists()
    assert run_cli("accept", OTHER, "--reason", "kept too", "--venv", str(venv), cwd=str(project)).returncode == 0
    newer = pyproject.read_text()
    assert [line for line in _only_insertions(new, newer) if line.startswith("[[")] == ["[[tool.driftscan.accept]]"]
    assert newer.index(f'path = "{LOADER}"') < newer.index(f'path = "{OTHER}"') < newer.index("[tool.mypy]")
    code, report, _ = audit(venv, project)
    assert code == 0 and report["summary"]["accepted"] == 2


def test_accept_creates_the_table_in_a_named_pyproject(venv, tmp_path):
    (tmp_path / "named").mkdir()
    pyproject = tmp_path / "named" / "pyproject.toml"
    original = '[project]\nname = "demo"  # no driftscan table yet\n'
    pyproject.write_text(original)
    proc = run_cli("accept", OTHER, "--reason", "r", "--any-content", "--config", str(pyproject), "--venv", str(venv),
                   cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    text = pyproject.read_text()
    assert text.startswith(original) and "[[tool.driftscan.accept]]" in text and "sha256" not in text
    # A pyproject.toml without [tool.driftscan] is not found: accept's default is then ./driftscan.toml.
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    (sub / "pyproject.toml").write_text(original)
    assert run_cli("accept", OTHER, "--reason", "r", "--venv", str(venv), cwd=str(sub)).returncode == 0
    assert (sub / "pyproject.toml").read_text() == original and (sub / "driftscan.toml").exists()


def test_config_is_found_upward_from_a_subdirectory(venv, tmp_path):
    project = tmp_path / "project"
    deep = project / "src" / "deeper"
    deep.mkdir(parents=True)
    (project / "pyproject.toml").write_text(f'[tool.driftscan]\n[[tool.driftscan.accept]]\npath = "accpkg/*.py"\n'
                                            'reason = "from the project root"\n')
    (project / "src" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.driftscan]: passed over
    code, report, _ = audit(venv, deep)
    assert code == 0 and report["summary"]["accepted"] == 2
    assert {d["accepted"]["source"] for d in report["drifts"]} == {str(project / "pyproject.toml")}
    # A nearer driftscan.toml wins (configuration files are not merged).
    (project / "src" / "driftscan.toml").write_text(f'[[accept]]\npath = "{OTHER}"\nreason = "nearer"\n')
    code, report, _ = audit(venv, deep)
    assert code == 1 and by_relpath(report)[OTHER]["accepted"]["reason"] == "nearer"
    assert by_relpath(report)[LOADER]["accepted"] is None


@pytest.mark.parametrize(("name", "text", "where", "what"), [
    ("driftscan.toml", '[[accept]]\npath = "a.py"\n', "accept[0].reason", "Field required"),
    ("driftscan.toml", '[[accept]]\npath = "a.py"\nreason = "ok"\n[[accept]]\npath = "b.py"\nreason = "r"\nsha256 = "xyz"\n',
     "accept[1].sha256", "not a sha256"),
    ("driftscan.toml", '[[accept]]\npath = "a.py"\nreason = "r"\nexpires = "soon"\n', "accept[0].expires", "date"),
    ("driftscan.toml", '[[accept]]\npath = "a.py"\nreason = "r"\nexpires = 2027-03-01T10:00:00\n', "accept[0].expires",
     "not a date and time"),
    ("driftscan.toml", '[[accept]]\npath = "a.py"\nreason = "  "\n', "accept[0].reason", "must not be empty"),
    ("driftscan.toml", '[[accept]]\npath = "a.py"\nreason = "r"\nsha = "00"\n', "accept[0].sha", "Extra inputs"),
    ("driftscan.toml", 'accept = "a.py"\n', "accept", "list"),
    ("pyproject.toml", '[tool.driftscan]\n[[tool.driftscan.accept]]\nreason = "r"\n', "tool.driftscan.accept[0].path",
     "Field required"),
])
def test_a_malformed_entry_is_one_line_naming_file_and_entry(venv, tmp_path, name, text, where, what):
    config = tmp_path / name
    config.write_text(text)
    proc = run_cli("audit", "--venv", str(venv), cwd=str(tmp_path))
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"driftscan: error: {config}: {where}: ") and what in lines[0], lines[0]
    with pytest.raises(ConfigError, match=what):
        load_config(str(config))


def test_accept_errors_are_one_line(venv, tmp_path):
    proc = run_cli("accept", "accpkg/clean.py", "--reason", "r", "--venv", str(venv), cwd=str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "driftscan: error: accpkg/clean.py: no drift there (give the relpath the report shows, or the file's path)"]
    assert not (tmp_path / "driftscan.toml").exists()  # nothing written when one path fails
    proc = run_cli("accept", LOADER, "--reason", "r", "--expires", "next week", "--venv", str(venv), cwd=str(tmp_path))
    assert proc.returncode == 2 and "not a date" in proc.stderr


def test_accept_by_file_path_and_of_a_missing_file(venv, tmp_path):
    sp = site_packages_of(venv)
    (sp / OTHER).unlink()
    proc = run_cli("accept", str(sp / LOADER), OTHER, "--reason", "r", "--venv", str(venv), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert f"{OTHER}: the file is missing: accepted with any content" in proc.stderr
    text = (tmp_path / "driftscan.toml").read_text()
    assert f'path = "{LOADER}"' in text and text.count("sha256") == 1  # the relpath is written, not /tmp/…
    code, report, _ = audit(venv, tmp_path)
    assert code == 0 and by_relpath(report)[OTHER]["kind"] == "missing"
    again = run_cli("accept", LOADER, "--reason", "r", "--venv", str(venv), cwd=str(tmp_path))
    assert again.returncode == 0 and "already accepted by entry 0" in again.stderr
    assert (tmp_path / "driftscan.toml").read_text() == text


def test_diff_applies_accept_entries_too(installed, tmp_path):
    venv = tmp_path / "venv"
    shutil.copytree(installed, venv, symlinks=True)
    snapshot = tmp_path / "baseline.json"
    assert run_cli("snapshot", "--venv", str(venv), "-o", str(snapshot)).returncode == 0
    (site_packages_of(venv) / "accpkg" / "clean.py").write_text("X = 2\n")
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli("diff", str(snapshot), "--format", "json", cwd=str(work))
    assert proc.returncode == 1, proc.stderr
    [drift] = json.loads(proc.stdout)["drifts"]
    assert drift["relpath"].endswith("accpkg/clean.py") and drift["accepted"] is None
    (work / "driftscan.toml").write_text('[[accept]]\npath = "**/accpkg/clean.py"\nreason = "baseline moved on"\n')
    proc = run_cli("diff", str(snapshot), "--format", "json", cwd=str(work))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["drifts"][0]["accepted"]["reason"] == "baseline moved on"


def test_accept_creates_a_named_config_file_that_does_not_exist_yet(venv, tmp_path):
    target = tmp_path / "ci" / "accepted.toml"
    target.parent.mkdir()
    proc = run_cli("accept", OTHER, "--reason", "r", "--config", str(target), "--venv", str(venv), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert target.read_text().startswith(f'[[accept]]\npath = "{OTHER}"\n')
    code, report, _ = audit(venv, tmp_path, "--config", str(target))
    assert code == 1 and report["summary"]["accepted"] == 1  # the loader patch is not accepted
