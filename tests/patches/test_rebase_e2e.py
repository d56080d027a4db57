"""``driftscan patch rebase`` end to end: two releases of a small package built here (2.0 takes one of
the patch's fixes and changes other lines its own way), the 1.0 patch carried onto 2.0 by the command
line with the wheels found through ``--wheels``; the new patch checked with ``git apply`` in the
unpacked 2.0 wheel and applied by ``driftscan patch apply`` to a real pip venv of 2.0; the conflict
path through the work directory, ``--continue`` and ``--abort``."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from fixtures import venvs
from fixtures.harness import run_cli
from fixtures.patchfiles import patch_text, toy_core as core
from fixtures.tools import need_tool
from fixtures.wheels import build_wheel, record_hash

from driftscan.render import json_schema

pytestmark = pytest.mark.slow

DIST = "toy"


V10 = core()
V20 = core(beta="20", gamma="33")  # 2.0 made the beta fix too, and changed gamma its own way
CLEAN = core(alpha="10", beta="20")  # alpha: carried; beta: already in 2.0
CONFLICTING = core(alpha="10", beta="20", gamma="30")  # gamma: 2.0 changed the same line


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("house")
    for version, text in (("1.0", V10), ("2.0", V20)):
        build_wheel(house, DIST, version, {"toy/__init__.py": "", "toy/core.py": text})
    return house


def isolated(tmp_path: Path) -> dict[str, str]:
    """No cache of this machine's user answers for the wheels: only --wheels does."""
    return {"PIP_CACHE_DIR": str(tmp_path / "pip-cache"), "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg")}


def write_patch(directory: Path, patched: str, version: str = "1.0") -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / f"{DIST}@{version}.patch"
    path.write_text(patch_text(DIST, version, {"toy/core.py": (V10, patched)}))
    return path


def rebase(tmp_path: Path, *args: str):
    proc = run_cli("patch", "rebase", *args, "--format", "json", cwd=str(tmp_path), env=isolated(tmp_path))
    assert proc.stdout, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json_schema("patch-rebase"))  # every real run's JSON is what the schema says
    return proc.returncode, result


def test_a_clean_rebase_applies_with_git_and_with_patch_apply(house, tmp_path):
    need_tool("git")
    write_patch(tmp_path / "patches", CLEAN)
    code, result = rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(house), "-o", "out")
    assert code == 0, result
    assert result["state"] == "written" and result["from_version"] == "1.0"
    (f,) = result["files"]
    assert f["state"] == "carried" and f["base_from"] == "release"
    assert [h["state"] for h in f["hunks"]] == ["applied", "already"]
    new_patch = tmp_path / "out" / "toy@2.0.patch"
    assert new_patch.exists() and (tmp_path / "patches" / "toy@1.0.patch").exists()
    assert f" toy/core.py {record_hash(V20.encode())}\n" in new_patch.read_text()

    # git accepts it in the unpacked 2.0 wheel
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(next(house.glob("toy-2.0-*.whl"))) as wheel:
        wheel.extractall(unpacked)
    check = subprocess.run(["git", "apply", "--check", "-p1", str(new_patch)], cwd=unpacked, capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr

    # and driftscan patch apply writes it into a real pip venv of 2.0
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), f"{DIST}==2.0")
    applied = run_cli("patch", "apply", "--venv", str(venv), "--patches", "out", "--yes", "--format", "json",
                      cwd=str(tmp_path))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    report = json.loads(applied.stdout)
    assert [p["state"] for p in report["patches"]] == ["applied"]
    assert (venvs.site_packages_of(venv) / "toy" / "core.py").read_text() == core(alpha="10", beta="20", gamma="33")

    # text output: the file written, the old one left, the manifest line
    text = run_cli("patch", "rebase", DIST, "--to", "2.0", "--wheels", str(house), "-o", "out", cwd=str(tmp_path),
                   env=isolated(tmp_path))
    assert text.returncode == 0 and "is already this patch" in text.stdout
    assert 'version = "==2.0", sha256 = ' in text.stdout


def test_a_conflict_then_continue_and_abort(house, tmp_path):
    write_patch(tmp_path / "patches", CONFLICTING)
    code, result = rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(house))
    assert code == 1 and result["state"] == "conflict"
    work = tmp_path / "patches" / "toy@2.0.rebase"
    assert result["workdir"] == "patches/toy@2.0.rebase" or Path(result["workdir"]).resolve() == work.resolve()
    hunks = result["files"][0]["hunks"]
    assert [h["state"] for h in hunks] == ["applied", "already", "conflict"]
    assert "return 33" in " ".join(hunks[2]["theirs"]) and "return 30" in " ".join(hunks[2]["ours"])
    merged = (work / "files" / "toy" / "core.py").read_text()
    block = ("<<<<<<< toy 1.0 + patch\n    return 30\n||||||| toy 1.0\n    return 3\n=======\n    return 33\n"
             ">>>>>>> toy 2.0\n")
    assert block in merged and "return 10" in merged
    assert (work / "upstream" / "toy" / "core.py").read_text() == V20
    state = json.loads((work / "state.json").read_text())
    assert state["files"] == [{"rel": "toy/core.py", "upstream": record_hash(V20.encode()), "deleted": False,
                               "new": False, "conflicted": True}]

    again = run_cli("patch", "rebase", DIST, "--to", "2.0", "--wheels", str(house), cwd=str(tmp_path),
                    env=isolated(tmp_path))
    assert again.returncode == 2 and "--continue" in again.stdout and "--abort" in again.stdout

    markers = run_cli("patch", "rebase", "--continue", cwd=str(tmp_path))
    assert markers.returncode == 1
    assert f"toy@2.0.rebase/files/toy/core.py:{merged.split(chr(10)).index('<<<<<<< toy 1.0 + patch') + 1}" \
        in markers.stdout

    (work / "files" / "toy" / "core.py").write_text(merged.replace(block, "    return 330\n"))
    done = run_cli("patch", "rebase", "--continue", "--format", "json", cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["state"] == "written" and out["workdir_removed"] and not work.exists()
    new_patch = (tmp_path / "patches" / "toy@2.0.patch").read_text()
    assert "+    return 330\n" in new_patch and "-    return 33\n" in new_patch and "+    return 10\n" in new_patch

    # --abort: a new conflict, dropped
    (tmp_path / "patches" / "toy@2.0.patch").unlink()
    assert rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(house))[0] == 1
    aborted = run_cli("patch", "rebase", "--abort", str(work), cwd=str(tmp_path))
    assert aborted.returncode == 0 and "removed" in aborted.stdout and not work.exists()
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_from_chooses_and_a_missing_wheel_says_how_to_get_it(house, tmp_path):
    write_patch(tmp_path / "patches", CLEAN, "1.0")
    write_patch(tmp_path / "patches", CONFLICTING, "1.5")  # made on "1.5": its originals are V10's
    code, result = rebase(tmp_path, DIST, "--to", "2.0", "--from", "1.0", "--wheels", str(house))
    assert code == 0 and result["patch"].endswith("toy@1.0.patch")

    code, result = rebase(tmp_path, DIST, "--to", "3.0", "--wheels", str(house))
    assert code == 2 and result["state"] == "refused" and "3.0" in result["message"]
    assert any(note.startswith("pip download --no-deps --only-binary :all: toy==3.0") for note in result["notes"])
    text = run_cli("patch", "rebase", DIST, "--to", "3.0", "--wheels", str(house), cwd=str(tmp_path),
                   env=isolated(tmp_path))
    assert text.returncode == 2 and "pip download --no-deps --only-binary :all: toy==3.0" in text.stdout
    assert "Traceback" not in text.stderr


def test_usage_errors_are_one_line(tmp_path):
    for args in (("--continue", "--abort"), (DIST,), ("--continue", "--to", "2.0")):
        proc = run_cli("patch", "rebase", *args, cwd=str(tmp_path))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.strip()
    proc = run_cli("patch", "rebase", "--continue", cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_old_original_comes_from_the_installed_old_version(house, tmp_path):
    """No 1.0 wheel anywhere: the installed 1.0 file, which still hashes to the patch's original, is the base."""
    only_new = tmp_path / "only-new"
    only_new.mkdir()
    (only_new / next(house.glob("toy-2.0-*.whl")).name).write_bytes(next(house.glob("toy-2.0-*.whl")).read_bytes())
    venv = venvs.make_pip_venv(tmp_path / "venv")
    venvs.pip_install(venv, "--no-index", "--find-links", str(house), f"{DIST}==1.0")
    write_patch(tmp_path / "patches", CLEAN)
    code, result = rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(only_new), "--venv", str(venv))
    assert code == 0, result
    assert result["files"][0]["base_from"] == "installed"
    # Without the environment there is no original: refused, nothing written.
    (tmp_path / "patches" / "toy@2.0.patch").unlink()
    code, result = rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(only_new))
    assert code == 2 and "no original of toy 1.0" in result["message"]
    assert not (tmp_path / "patches" / "toy@2.0.patch").exists()


def test_a_hostile_work_directory_is_refused_in_one_line_by_the_command_line(house, tmp_path):
    write_patch(tmp_path / "patches", CONFLICTING)
    assert rebase(tmp_path, DIST, "--to", "2.0", "--wheels", str(house))[0] == 1
    work = tmp_path / "patches" / "toy@2.0.rebase"
    state = json.loads((work / "state.json").read_text())
    state["files"][0]["rel"] = "../../escaped.py"
    (work / "state.json").write_text(json.dumps(state))
    proc = run_cli("patch", "rebase", "--continue", str(work), cwd=str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith("refused ") and "not plainly below the install root" in proc.stdout
    assert proc.stdout.count("\n") == 2  # the refusal, then "nothing written"
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path / "patches" / "toy@2.0.patch").exists()
    assert work.exists()  # left for --abort
